"""``kvscale verify`` in four modules: ``run`` (options, result, ``verify_target``), ``target``
(what is verified: a scales output or a resolved checkpoint), ``stats`` (one layer through the
cache write, measured against the thresholds) and ``model_run`` (``--data``: the model on real
text).
"""
