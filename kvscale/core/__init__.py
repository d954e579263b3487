"""The commands' core: each module does one command's work and returns frozen dataclasses.

``inspect`` (resolve a checkpoint), ``normalize``, ``diff``, ``verify`` and the ``calibrate``
package (the model side and the run). The CLI (``kvscale.cli``) and the Python API
(``kvscale.inspect`` ...) call them; nothing here prints or exits.
"""
