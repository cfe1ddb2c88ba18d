"""One client-visible error type and the handlers that render OpenAI's error shape.

Every error body is `{"error": {"message", "type", "param", "code"}}` with `code` a
string; request validation maps to 400 (never FastAPI's 422).
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from app.access_log import record_error

logger = logging.getLogger(__name__)

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_error",
    500: "server_error",
    503: "service_unavailable_error",
}
_CODES = {
    400: "invalid_request",
    401: "invalid_api_key",
    404: "not_found",
    405: "method_not_allowed",
    413: "request_too_large",
    415: "unsupported_media_type",
    500: "internal_error",
    503: "service_unavailable",
}


class GatewayError(Exception):
    """An error the client should see, with its HTTP status."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        code: str | None = None,
        param: str | None = None,
        type: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code or _CODES.get(status, "error")
        self.param = param
        self.type = type or _TYPES.get(
            status, "server_error" if status >= 500 else "invalid_request_error"
        )
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }

    def to_bytes(self) -> bytes:
        """The body as sent: every error leaves through here (counted in /metrics)."""
        record_error(self.code)
        return orjson.dumps(self.body())

    def response(self) -> Response:
        return Response(
            self.to_bytes(),
            status_code=self.status,
            media_type="application/json",
            headers=self.headers,
        )


# pydantic names a union's branches in `loc` by their types ("str", "list[TextPart]",
# "NamedToolChoice", "literal['none','auto']"): never a field of the OpenAI API
_TYPE_NAMES = frozenset({"str", "int", "float", "bool", "none", "dict", "list"})


def _branch(part: Any) -> bool:
    return isinstance(part, str) and (part in _TYPE_NAMES or "[" in part or part[:1].isupper())


def _furthest_branches(errors: list[Any]) -> list[Any]:
    """Of a union's failed branches keep those that got furthest into the value: for
    `content: [{"type": "text"}]` the list branch's missing `text`, not "should be a
    valid string"."""
    depth: dict[tuple[Any, ...], int] = {}
    split: list[tuple[Any, int | None]] = []
    for err in errors:
        loc = tuple(err.get("loc", ()))
        at = next((i for i, part in enumerate(loc) if _branch(part)), None)
        split.append((err, at))
        if at is not None:
            depth[loc[:at]] = max(depth.get(loc[:at], 0), len(loc) - at)
    kept = []
    for err, at in split:
        loc = tuple(err.get("loc", ()))
        if at is None or len(loc) - at == depth[loc[:at]]:
            kept.append(err)
    return kept


def _either(texts: list[str]) -> str:
    """One place's failed branches in one sentence: "Input should be a valid string, or
    input should be a valid list"."""
    unique = list(dict.fromkeys(texts))  # two object branches fail alike on a string
    return ", or ".join([unique[0], *(t[:1].lower() + t[1:] for t in unique[1:])])


def _loc_to_param(loc: tuple[Any, ...] | list[Any]) -> str | None:
    parts = [str(p) for p in loc if p != "body" and not _branch(p)]
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out += f"[{p}]" if p.isdigit() else f".{p}"
    return out


def body_not_an_object(content_type: str | None) -> GatewayError:
    """The 400 for a body FastAPI did not read as a JSON object, saying why: the media type
    it came with (none, or curl -d's form type, are the usual slips), or another JSON value.
    Only application/json is read: a browser may send the others cross-site unasked."""
    kind = (content_type or "").split(";")[0].strip().lower()
    if kind == "application/json" or kind.endswith("+json"):
        return GatewayError("The request body must be a JSON object ({...}), not another value.")
    if not kind:
        sent = "The request has no Content-Type"
    else:
        sent = f"The request body was sent as {kind}"
        if kind == "application/x-www-form-urlencoded":
            sent += " (what curl -d sends without -H 'Content-Type: application/json')"
    return GatewayError(f"{sent}; send a JSON object with Content-Type: application/json.")


def validation_error(exc: RequestValidationError, content_type: str | None = None) -> GatewayError:
    """Turn pydantic's error list into one readable 400 (`content_type`: the request's)."""
    errors = exc.errors()
    if not errors:
        return GatewayError("Invalid request body.")
    first = errors[0]
    if first.get("type") == "json_invalid":
        return GatewayError(
            f"We could not parse the JSON body of your request: {first.get('msg', '')}.",
            code="invalid_json",
        )
    if first.get("type") == "missing" and tuple(first.get("loc", ())) == ("body",):
        return GatewayError("The request body is empty; send a JSON object.", code="invalid_json")
    if tuple(first.get("loc", ())) == ("body",):
        return body_not_an_object(content_type)
    errors = _furthest_branches(list(errors))
    param = _loc_to_param(errors[0].get("loc", ()))
    by_param: dict[str, list[str]] = {}  # a union's branches at one place: "A or B"
    for err in errors:
        where = _loc_to_param(err.get("loc", ())) or "body"
        by_param.setdefault(where, []).append(err.get("msg", "invalid value"))
    msgs = [f"{where}: {_either(texts)}" for where, texts in by_param.items()]
    more = f" (and {len(msgs) - 5} more)" if len(msgs) > 5 else ""
    return GatewayError("Invalid request: " + "; ".join(msgs[:5]) + more, param=param)


async def _gateway_error_handler(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, GatewayError)
    return exc.response()


async def _validation_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    return validation_error(exc, request.headers.get("content-type")).response()


# OpenAI endpoints a client may try that this gateway does not serve, and what to use
_NOT_SERVED = {
    "/v1/responses": "the Responses API is not served here: send the conversation to "
    "POST /v1/chat/completions (OpenAI SDK: client.chat.completions.create; LangChain: "
    "ChatOpenAI without use_responses_api)",
    "/v1/embeddings": "this gateway serves a chat model, which makes no embeddings",
}


def not_found_message(method: str, path: str) -> str:
    """The 404 message, with what to use instead for an OpenAI endpoint not served here."""
    base = path.rstrip("/")
    hint = next((h for p, h in _NOT_SERVED.items() if base == p or base.startswith(p + "/")), "")
    return f"No route for {method} {path}" + (f"; {hint}." if hint else ".")


async def _http_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    status = exc.status_code
    if status == 404:
        message = not_found_message(request.method, request.url.path)
    elif status == 405:
        message = f"Method {request.method} is not allowed on {request.url.path}."
    elif status == 400 and exc.__cause__ is not None:
        return _body_error(exc.__cause__, exc).response()
    else:
        message = str(exc.detail)
    return GatewayError(message, status=status, headers=dict(exc.headers or {})).response()


def _body_error(cause: BaseException, exc: StarletteHTTPException) -> GatewayError:
    """FastAPI's one "There was an error parsing the body" 400, by what went wrong: a
    GatewayError raised while the body streamed in (BodyLimitMiddleware's 413 for a
    chunked body) is that error; bytes that are not UTF-8 and JSON nested past Python's
    limit get their own clear 400s."""
    if isinstance(cause, GatewayError):
        return cause
    if isinstance(cause, UnicodeDecodeError):
        return GatewayError(
            f"The request body is not valid UTF-8 (byte 0x{cause.object[cause.start]:02x} "
            f"at offset {cause.start}); send JSON encoded as UTF-8.",
            code="invalid_encoding",
        )
    if isinstance(cause, RecursionError):
        return GatewayError(
            "We could not parse the JSON body of your request: it is nested too deeply.",
            code="invalid_json",
        )
    return GatewayError(str(exc.detail), headers=dict(exc.headers or {}))


async def _unexpected_handler(request: Request, exc: Exception) -> Response:
    logger.exception("unexpected error on %s %s", request.method, request.url.path)
    return GatewayError(
        "The server had an error while processing your request.", status=500
    ).response()


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(GatewayError, _gateway_error_handler)
    app.add_exception_handler(RequestValidationError, _validation_handler)
    app.add_exception_handler(StarletteHTTPException, _http_handler)
    app.add_exception_handler(Exception, _unexpected_handler)
