"""Catalog access: the only package that runs SQL against a DuckLake catalog database."""

from . import _metadata as metadata
from ._backend import MetadataBackend, MetadataSession, open_backend

__all__ = ["MetadataBackend", "MetadataSession", "metadata", "open_backend"]
