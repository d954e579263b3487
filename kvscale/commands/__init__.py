"""One module per command; each registers itself on ``kvscale._cli_base.app``."""
