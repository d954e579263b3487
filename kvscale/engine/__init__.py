"""The serving engines whose KV-scale rules kvscale reproduces, one package per engine.

``registry`` names them (``get_engine(name)`` returns one engine's ``base.Engine``); ``options``
holds what the user asks an engine to do; ``config`` the engine-neutral facts of config.json.
Each engine package states the release it mirrors.
"""
