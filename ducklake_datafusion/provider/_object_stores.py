"""Object stores for native scans of remote files, registered on the user's sessions.

DataFusion opens a native scan's files through the object store registered for the
URL's bucket on the session that *runs* the query, not on the session that built the
frame, and a catalog provider is never told which session that is. ``register(ctx,
name, lake)`` is told, so it attaches the session to the catalog (:class:`SessionStores`);
a remote table is read natively only by a catalog with an attached session, and its
bucket's store is registered on every attached session before the table is returned.

A store is made only when the lake's storage options translate exactly into
DataFusion's ``AmazonS3`` (:func:`s3_store`): explicit keys (DataFusion's credential
chain reads no ``~/.aws`` profiles, so relying on ambient credentials could fail where
the exact path succeeds), path-style addressing (what ``AmazonS3`` does with an
endpoint), no anonymous access (``AmazonS3`` always signs). GCS and Azure files keep the
exact path: datafusion-python's GCS store takes only a key file, and its Azure store
another URL form. The exact path reads every store with the user's options.
"""

from __future__ import annotations

import threading
import weakref

from datafusion.object_store import AmazonS3

from ..errors import InvalidOptionError
from ..pathres import StorageOptions
from ..pathres._filesystems import _s3_kwargs

__all__ = ["SessionStores", "s3_store"]


def s3_store(bucket: str, options: StorageOptions) -> AmazonS3 | None:
    """DataFusion's store for ``bucket`` under ``options``, or ``None`` if it would not
    read the bucket exactly as the exact path's ``pyarrow`` filesystem does."""
    if options.anonymous or options.url_style == "vhost" or not options.access_key_id:
        return None
    try:
        kwargs = _s3_kwargs(options)  # the exact path's normalisation: region, endpoint
    except InvalidOptionError:
        return None  # the exact path raises it, naming the option
    endpoint = None
    if "endpoint_override" in kwargs:
        endpoint = f"{kwargs['scheme']}://{kwargs['endpoint_override']}"
    elif kwargs.get("scheme") == "http":
        return None  # plain http to AWS itself: not what AmazonS3 does
    return AmazonS3(
        bucket_name=bucket,
        region=kwargs["region"],
        access_key_id=kwargs["access_key"],
        secret_access_key=kwargs["secret_key"],
        session_token=kwargs.get("session_token"),
        endpoint=endpoint,
        allow_http=kwargs.get("scheme") == "http",
    )


class SessionStores:
    """The sessions a catalog was registered in, and the stores registered on them.

    Sessions are held weakly: a catalog outliving its session does not keep it alive.
    """

    def __init__(self) -> None:
        self._sessions: weakref.WeakSet = weakref.WeakSet()
        self._stores: dict[str, AmazonS3] = {}  # bucket -> store
        self._lock = threading.Lock()

    def attach(self, ctx) -> None:
        """Remember ``ctx`` and register every store made so far on it."""
        with self._lock:
            self._sessions.add(ctx)
            for bucket, store in self._stores.items():
                ctx.register_object_store("s3://", store, bucket)

    def __bool__(self) -> bool:
        return len(self._sessions) > 0

    def sole_session(self):
        """The session ``register()`` put the catalog in, if exactly one (else None)."""
        with self._lock:
            sessions = list(self._sessions)
        return sessions[0] if len(sessions) == 1 else None

    def provide(self, buckets, options: StorageOptions) -> bool:
        """Register a store for each bucket on every attached session; False if a bucket's
        options do not translate (the table then takes the exact path)."""
        with self._lock:
            for bucket in buckets:
                if bucket in self._stores:
                    continue
                store = s3_store(bucket, options)
                if store is None:
                    return False
                self._stores[bucket] = store
                for ctx in list(self._sessions):
                    ctx.register_object_store("s3://", store, bucket)
            return True
