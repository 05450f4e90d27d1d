"""Exceptions raised by the gpuflow client.

Every failed call raises a subclass of :class:`Error` carrying the gRPC status
code and the server's message, e.g.::

    try:
        session.download("missing")
    except gpuflow.NotFoundError as e:
        print(e.code, e.details)
"""

import grpc


class Error(Exception):
    """A gpuflow call failed. ``code`` is a ``grpc.StatusCode``; ``details``
    is the server's message. ``retry_after`` is, for a refusal that clears
    as other work ends (a tenant's or the server's sessions, memory or
    requests in flight), how many seconds the server suggests waiting
    before trying again; None otherwise."""

    code = grpc.StatusCode.UNKNOWN

    def __init__(self, details, code=None, retry_after=None):
        super().__init__(details)
        self.details = details
        self.retry_after = retry_after
        if code is not None:
            self.code = code

    def __str__(self):
        return f"{self.code.name}: {self.details}"


class InvalidArgumentError(Error):
    code = grpc.StatusCode.INVALID_ARGUMENT


class NotFoundError(Error):
    code = grpc.StatusCode.NOT_FOUND


class ResourceExhaustedError(Error):
    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class FailedPreconditionError(Error):
    code = grpc.StatusCode.FAILED_PRECONDITION


class UnauthenticatedError(Error):
    """The server has tenants and the call carried no valid bearer token
    (``gpuflow.connect(..., token=...)`` or ``$GPUFLOW_TOKEN``). The server
    never says what was wrong with a token."""

    code = grpc.StatusCode.UNAUTHENTICATED


class PermissionDeniedError(Error):
    """The server does not allow this request (e.g. a raw CUDA kernel on a
    server started without --allow_raw_kernels, or from a tenant without
    allow_raw_kernels)."""

    code = grpc.StatusCode.PERMISSION_DENIED


class SessionClosedError(NotFoundError):
    """A RemoteArray (or a call) used a session that this client closed.
    Raised by the client before any request; the server would answer
    NOT_FOUND."""


class UnavailableError(Error):
    code = grpc.StatusCode.UNAVAILABLE


class SessionLostError(UnavailableError):
    """A session's worker (one gpuflowd of a pool, docs/scale-out.md) is
    gone or not serving: the session and its arrays are lost with it. Other
    sessions, on other workers, are not affected; open a new session."""


class UnimplementedError(Error):
    code = grpc.StatusCode.UNIMPLEMENTED


class CancelledError(Error):
    code = grpc.StatusCode.CANCELLED


class InternalError(Error):
    code = grpc.StatusCode.INTERNAL


_BY_CODE = {
    cls.code: cls
    for cls in (
        InvalidArgumentError,
        NotFoundError,
        ResourceExhaustedError,
        FailedPreconditionError,
        PermissionDeniedError,
        UnauthenticatedError,
        UnavailableError,
        UnimplementedError,
        CancelledError,
        InternalError,
    )
}


def from_rpc_error(err):
    """Turns a grpc.RpcError into the matching gpuflow Error."""
    code = err.code() if callable(getattr(err, "code", None)) else grpc.StatusCode.UNKNOWN
    details = err.details() if callable(getattr(err, "details", None)) else str(err)
    retry_after = None
    trailing = err.trailing_metadata() if callable(getattr(err, "trailing_metadata", None)) else None
    for key, value in trailing or ():
        if key == "grpc-retry-pushback-ms":
            try:
                retry_after = int(value) / 1000
            except ValueError:
                pass
    cls = _BY_CODE.get(code, Error)
    return cls(details or "", code, retry_after=retry_after)
