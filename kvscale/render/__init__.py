"""All rendering lives here: JSON documents for machines, rich renderables for people.

Core modules return dataclasses; these functions turn them into output and never compute
engine results themselves.
"""
