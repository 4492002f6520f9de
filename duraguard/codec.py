"""An AES-GCM payload codec: inputs, results, memos and summaries leave the worker encrypted.

Keys come from the environment, first key encrypts, every key decrypts::

    DURAGUARD_CODEC_KEYS="k2:<base64 key>,k1:<base64 key>"

To rotate, make a new key (``duraguard codec-keygen k2``) and put it first; payloads written
under ``k1`` still decrypt as long as ``k1`` stays in the list. Each encrypted payload carries
its key id in its metadata and is bound to it (the key id is the AES-GCM associated data).

Search attributes are never encrypted by a codec: duraguard keeps only counts and guardrail
names there.

The Web UI's codec endpoint (:class:`CodecServer`, ``duraguard codec-server``) decrypts for
whoever can reach it, so every request is checked before a payload is read:

* the ``Host`` header must name the endpoint (``localhost``, ``127.0.0.1``, ``[::1]``, the
  address it is bound to, or a name given in ``allowed_hosts``): a web page that rebinds its
  own DNS name to 127.0.0.1 sends that name and is refused (421), as are other names that
  resolve to loopback and other addresses;
* a browser's ``Origin`` must be a configured Web UI origin (``cors_origins``), or the request,
  preflight included, is refused (403); CORS headers go only to those origins;
* ``/encode`` and ``/decode`` take ``Content-Type: application/json`` only (415): text, form
  bodies and no type at all are what a page may send another site without a preflight;
* beyond loopback, and on loopback once ``$DURAGUARD_CODEC_TOKEN`` is set, every ``/encode``
  and ``/decode`` must carry ``Authorization: Bearer <token>`` (401 without it, 403 with
  another; compared in constant time). In the Web UI, turn on "Pass the user access token" in
  the codec settings, or put the endpoint behind a proxy that adds the header.

The Web UI's own calls pass: a preflight from its origin, then ``POST /decode`` with JSON.
"""

from __future__ import annotations

import base64
import hmac
import ipaddress
import os
import re
import secrets
import threading
from collections.abc import Iterable, Mapping, Sequence

from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from ._codec_http import MAX_BODY_BYTES as MAX_BODY_BYTES
from ._codec_http import handler_for, host_name
from .errors import DuraguardError

ENV_VAR = "DURAGUARD_CODEC_KEYS"
TOKEN_ENV = "DURAGUARD_CODEC_TOKEN"
"""The bearer token the codec endpoint requires (always beyond loopback; on loopback if set)."""
MIN_TOKEN_CHARS = 24
ENCODING = b"binary/encrypted"
KEY_ID_META = "encryption-key-id"
NONCE_BYTES = 12
_KEY_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class CodecError(DuraguardError, ValueError):
    """A payload or key that cannot be used; the message says which and the fix."""


def new_key(bits: int = 256) -> str:
    """A fresh random AES key, base64-encoded (128, 192 or 256 bits)."""
    if bits not in (128, 192, 256):
        raise CodecError(f"an AES key is 128, 192 or 256 bits; got {bits}")
    return base64.b64encode(secrets.token_bytes(bits // 8)).decode()


def parse_keys(spec: str) -> list[tuple[str, bytes]]:
    """Read ``"kid1:base64,kid2:base64"`` into ``[(kid, key), ...]``, in order.

    Raises:
        CodecError: an entry without a key id, a key id used twice, or a key of the wrong size.
    """
    keys: list[tuple[str, bytes]] = []
    for raw in spec.split(","):
        entry = raw.strip()
        if not entry:
            continue
        kid, sep, b64 = entry.partition(":")
        if not sep or not kid or not b64:
            raise CodecError(
                f"{ENV_VAR} entry {kid or entry!r} must be KEY_ID:BASE64_KEY; "
                "make one with `duraguard codec-keygen KEY_ID`"
            )
        try:
            key = base64.b64decode(b64, validate=True)
        except ValueError:
            raise CodecError(f"{ENV_VAR} key {kid!r} is not valid base64") from None
        keys.append((kid, key))
    return keys


class AesGcmCodec(PayloadCodec):
    """Encrypts every payload with AES-GCM under the first key; decrypts with any key by id.

    Args:
        keys: ``(key id, key bytes)`` pairs or a mapping, first one encrypts.
    """

    def __init__(self, keys: Mapping[str, bytes] | Sequence[tuple[str, bytes]]) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        pairs = list(keys.items()) if isinstance(keys, Mapping) else list(keys)
        if not pairs:
            raise CodecError(
                f"no codec keys; set {ENV_VAR}=KEY_ID:BASE64_KEY (`duraguard codec-keygen k1`)"
            )
        self._ciphers: dict[str, AESGCM] = {}
        for kid, key in pairs:
            if not _KEY_ID.match(kid):
                raise CodecError(f"key id {kid!r} must be 1-64 letters, digits, '.', '_' or '-'")
            if kid in self._ciphers:
                raise CodecError(f"key id {kid!r} is listed twice; give each key its own id")
            if len(key) not in (16, 24, 32):
                raise CodecError(
                    f"key {kid!r} is {len(key)} bytes; an AES key is 16, 24 or 32 bytes"
                )
            self._ciphers[kid] = AESGCM(key)
        self.key_id = pairs[0][0]
        """The key id new payloads are encrypted under."""

    @classmethod
    def from_env(cls, var: str = ENV_VAR, environ: Mapping[str, str] | None = None) -> AesGcmCodec:
        """The codec for the keys in ``$DURAGUARD_CODEC_KEYS``.

        Raises:
            CodecError: the variable is unset or malformed.
        """
        env = os.environ if environ is None else environ
        spec = env.get(var, "").strip()
        if not spec:
            raise CodecError(
                f"${var} is not set; set it to KEY_ID:BASE64_KEY[,OLD_ID:OLD_KEY...] "
                "(make a key with `duraguard codec-keygen k1`)"
            )
        return cls(parse_keys(spec))

    @property
    def key_ids(self) -> tuple[str, ...]:
        """Every key id this codec can decrypt, the encrypting one first."""
        return tuple(self._ciphers)

    def encode_sync(self, payloads: Iterable[Payload]) -> list[Payload]:
        """Encrypt each payload (the whole payload, metadata included) under the first key."""
        cipher = self._ciphers[self.key_id]
        out = []
        for p in payloads:
            nonce = secrets.token_bytes(NONCE_BYTES)
            sealed = cipher.encrypt(nonce, p.SerializeToString(), self.key_id.encode())
            out.append(
                Payload(
                    metadata={"encoding": ENCODING, KEY_ID_META: self.key_id.encode()},
                    data=nonce + sealed,
                )
            )
        return out

    def decode_sync(self, payloads: Iterable[Payload]) -> list[Payload]:
        """Decrypt each encrypted payload; payloads that are not encrypted pass unchanged.

        Raises:
            CodecError: an unknown key id, or a payload that fails authentication (altered,
                or encrypted under another key with the same id).
        """
        return [
            self._decode_one(p) if p.metadata.get("encoding") == ENCODING else p for p in payloads
        ]

    def _decode_one(self, p: Payload) -> Payload:
        from cryptography.exceptions import InvalidTag

        kid = p.metadata.get(KEY_ID_META, b"").decode(errors="replace")
        cipher = self._ciphers.get(kid)
        if cipher is None:
            known = ", ".join(self._ciphers) or "none"
            raise CodecError(
                f"payload was encrypted with key id {kid!r}, which is not in ${ENV_VAR} "
                f"(known: {known}); add that key to the list to read it"
            )
        data = bytes(p.data)
        if len(data) <= NONCE_BYTES:
            raise CodecError(
                f"encrypted payload under key {kid!r} is truncated ({len(data)} bytes)"
            )
        try:
            plain = cipher.decrypt(data[:NONCE_BYTES], data[NONCE_BYTES:], kid.encode())
        except InvalidTag:
            raise CodecError(
                f"payload under key id {kid!r} failed authentication: it was altered, or "
                f"${ENV_VAR} holds a different key under that id"
            ) from None
        out = Payload()
        out.ParseFromString(plain)
        return out

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Encrypt (see :meth:`encode_sync`)."""
        return self.encode_sync(payloads)

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Decrypt (see :meth:`decode_sync`)."""
        return self.decode_sync(payloads)


def codec_from_env(environ: Mapping[str, str] | None = None) -> AesGcmCodec | None:
    """The codec when ``$DURAGUARD_CODEC_KEYS`` is set, else ``None``."""
    env = os.environ if environ is None else environ
    return AesGcmCodec.from_env(environ=env) if env.get(ENV_VAR, "").strip() else None


DEFAULT_CORS_ORIGINS: tuple[str, ...] = ("http://localhost:8233", "http://127.0.0.1:8233")
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
"""``Host`` names that stand for this machine: no web page's own DNS name is one of them."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` reaches only this machine (``127.0.0.0/8``, ``::1``, ``localhost``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name that could resolve anywhere


def check_token(token: str | None, host: str) -> str | None:
    """The token the endpoint will require on ``host``, or ``None`` (loopback, none set).

    Raises:
        CodecError: beyond loopback without a token, or a token too short to resist guessing.
    """
    if token is None or token == "":
        if is_loopback(host):
            return None
        raise CodecError(
            f"the codec endpoint decrypts for whoever reaches it, so listening on {host} (beyond "
            f"loopback) needs a token: set ${TOKEN_ENV} (e.g. `python -c 'import secrets; "
            "print(secrets.token_urlsafe(32))'`) and have callers send Authorization: Bearer "
            "<token>; or listen on 127.0.0.1"
        )
    if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
        raise CodecError(
            f"the codec endpoint's token must be at least {MIN_TOKEN_CHARS} characters with no "
            "spaces; make one with `python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
        )
    return token


class CodecServer:
    """The Temporal Web UI's remote codec endpoint (stdlib ``http.server``).

    Answers ``POST /decode`` and ``POST /encode`` with the body ``{"payloads": [...]}`` the UI
    sends, and the CORS preflight the browser sends first. Point the UI at it with
    ``temporal server start-dev --ui-codec-endpoint URL`` or in the UI's data encoder settings.

    Who may ask, checked before any payload is read (see the module docstring): the ``Host``
    must name the endpoint (421), a browser's ``Origin`` must be one of ``cors_origins`` (403),
    the body must be ``application/json`` (415), and with a ``token`` every encode and decode
    must carry ``Authorization: Bearer <token>`` (401 without it, 403 with another; compared in
    constant time). A token is required to listen beyond loopback; on loopback the endpoint
    takes no token unless one is given.

    Args:
        codec: the codec to apply.
        port: port to listen on; 0 picks a free one.
        cors_origins: origins allowed to call (the Web UI's own address).
        host: address to bind; keep 127.0.0.1 so only this machine can reach it.
        token: the bearer token callers must send (``duraguard codec-server`` reads it from
            ``$DURAGUARD_CODEC_TOKEN``).
        allowed_hosts: ``Host`` names accepted besides the loopback ones and the bound address
            (the name a proxy or another machine reaches the endpoint by).

    Raises:
        CodecError: beyond loopback without a token, or a token that is too short.
    """

    def __init__(
        self,
        codec: AesGcmCodec,
        *,
        port: int = 0,
        cors_origins: Sequence[str] = DEFAULT_CORS_ORIGINS,
        host: str = "127.0.0.1",
        token: str | None = None,
        allowed_hosts: Iterable[str] = (),
    ) -> None:
        from http.server import ThreadingHTTPServer

        self.codec = codec
        self.cors_origins = tuple(o.rstrip("/") for o in cors_origins)
        self._token = check_token(token, host)
        named = {h.strip().lower().strip("[]") for h in allowed_hosts if h.strip()}
        self.allowed_hosts = frozenset(named | LOOPBACK_NAMES | {host.lower().strip("[]")})
        # Bound beyond loopback (a token is then required) with no names given, any Host is
        # taken: the machine's names are not known here, and the token guards the endpoint.
        self._any_host = not is_loopback(host) and not named
        self._httpd = ThreadingHTTPServer((host, port), handler_for(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def requires_token(self) -> bool:
        """Whether callers must send ``Authorization: Bearer <token>``."""
        return self._token is not None

    def authorized(self, header: str | None) -> int:
        """HTTP status for a request's ``Authorization`` header: 200 (go on), 401 or 403."""
        if self._token is None:
            return 200
        scheme, _, given = (header or "").strip().partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            return 401
        ok = hmac.compare_digest(given.strip().encode(), self._token.encode())
        return 200 if ok else 403

    @property
    def any_host(self) -> bool:
        """Whether every ``Host`` is taken (bound beyond loopback, no ``allowed_hosts``)."""
        return self._any_host

    def host_ok(self, header: str | None) -> bool:
        """Whether a request's ``Host`` header names this endpoint."""
        return self._any_host or host_name(header) in self.allowed_hosts

    def origin_ok(self, origin: str | None) -> bool:
        """Whether a request with this ``Origin`` (``None``: not sent by a page) may call."""
        return origin is None or origin.rstrip("/") in self.cors_origins

    @property
    def url(self) -> str:
        """The endpoint's base URL (the UI appends ``/decode``)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def serve_forever(self) -> None:
        """Serve in this thread until :meth:`stop` or Ctrl-C."""
        self._httpd.serve_forever(poll_interval=0.2)

    def start(self) -> CodecServer:
        """Serve in a background thread."""
        self._thread = threading.Thread(
            target=self.serve_forever, name="duraguard-codec", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> CodecServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
