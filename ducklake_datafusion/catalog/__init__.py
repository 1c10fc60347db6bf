"""Catalog access: the only package that runs SQL against a DuckLake catalog database."""

from . import metadata
from ._backend import MetadataBackend, MetadataSession, open_backend
from ._comments import table_column_comments, view_column_comments

__all__ = [
    "MetadataBackend",
    "MetadataSession",
    "metadata",
    "open_backend",
    "table_column_comments",
    "view_column_comments",
]
