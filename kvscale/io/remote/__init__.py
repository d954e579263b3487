"""Read a checkpoint where it lives: a Hugging Face Hub repository or an HTTPS URL, by byte ranges.

Inputs (``remote_spec``): ``hf://ORG/NAME[@REVISION]``; a bare ``ORG/NAME`` when nothing named
``ORG/NAME`` or ``ORG`` exists in the current directory; a Hub web or resolve URL (``https://huggingface.co/ORG/NAME[/resolve/REV/FILE]``);
any ``http(s)://.../X.safetensors`` or ``.../X.safetensors.index.json`` URL.

What is read, and how (``open_remote``):

1. The revision resolves once to a commit: ``GET {endpoint}/api/models/{repo}/revision/{rev}``
   (``sha`` and ``siblings[].rfilename``, what huggingface_hub's ``HfApi.model_info`` reads);
   every file is then read at that sha, ``GET {endpoint}/{repo}/resolve/{sha}/{file}``, so a
   branch that moves while kvscale reads cannot mix two commits. When the Hugging Face cache
   (``HF_HUB_CACHE``/``HF_HOME``, found through ``huggingface_hub.try_to_load_from_cache``) holds
   every file kvscale needs at that sha, the local copy is opened instead (layout ``hf-cache``);
   in offline mode (``HF_HUB_OFFLINE``) only the cache is used.
2. config.json, hf_quant_config.json and the index are fetched together, and only when the
   repository lists them.
3. Every shard's header is read with one ranged GET sized from what is already known (the
   index's tensor names per shard, and the per-tensor header size of the shards already read),
   and a second GET only when the header is larger than that. At most ``concurrency`` (16)
   requests run at once. The same worker then reads the bytes of the shard's KV-scale tensors
   (``kvscale.conventions.looks_like_kv_scale``) in one coalesced ranged GET computed from the
   validated offsets (none when the first read already holds them; a second one only where the
   scales lie further apart than a header's length, so that weights are never read in bulk).
   ``read_tensors`` then serves inspect from those bytes, and reads whatever else it is asked
   for the same way.

Every header passes ``kvscale.io.safetensors.parse_header`` with the limits local files have
(``max-header-bytes`` checked on the 8-byte length before anything more is asked), every JSON
file the strict reader and its size cap. A range answer must be a 206 whose ``Content-Range``
starts where asked, ends where asked (or at the end of the file) and matches the body and the
file size seen before; a 200 is accepted only as the whole of a file shorter than the range asked
for, and no body is ever read past the bytes asked for. Redirects are followed by kvscale itself
(at most ``max_redirects``; the token is sent only to the Hub's own origin, never to the CDN a
file redirects to); ``Accept-Encoding: identity``; 429 and 5xx are retried with exponential
backoff honouring ``Retry-After`` (one wait at most ``max_retry_wait``, all waits of a request at
most ``retry_budget``); connect and read timeouts, and an overall deadline for every read
(limit ``remote-read-seconds``: a server that trickles its answer a byte at a time, headers
included, cannot hold a run). The first failure stops every
other request of the run. Failures are one-line ``KVScaleError``s (exit 2) naming the URL, or
for what a file holds the ``hf://ORG/NAME@SHA/FILE`` it came from; a missing huggingface_hub is
an ``ExtraMissingError`` (exit 3).

Hub conventions come from huggingface_hub (an optional extra, ``kvscale[hub]``, imported only
when a remote input is opened): the token it would send implicitly (``HF_TOKEN``, then the token
file; none under ``HF_HUB_DISABLE_IMPLICIT_TOKEN``), offline mode, the cache, its shared HTTP
session (so that a ``set_client_factory`` proxy or certificate setup applies) and its read
timeout (``HF_HUB_DOWNLOAD_TIMEOUT``). The endpoint is ``HF_ENDPOINT`` (default the public Hub,
as in ``huggingface_hub/constants.py``), read when the input is opened. The user agent has
huggingface_hub's shape (``kvscale/V; hf_hub/V; python/V``) but is built here: its
``build_hf_headers`` detects "agent harnesses" from a registry it downloads from the endpoint
once a day (``utils/_detect_agent.py::_fetch_registry`` in 2.4.0), an extra request kvscale does
not want to make.

Modules: ``urls`` (what names a remote checkpoint), ``http`` (the client), ``headers`` (how much
to read of a shard), ``source`` (the remote source of a ``Checkpoint``, and ``open_remote``).
"""
