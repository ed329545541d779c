"""One OpenAI-compatible server (OpenAI, Ollama, vLLM, LM Studio...) as both of its users see
it: the embedding provider (embeddings/openai_compat.py) and the LLM jobs (jobs/llm.py).

Retries with exponential backoff on 429, 5xx, timeouts and connection errors are the
official client's (it honours Retry-After). What is ours: the base URL always explicit (never
$OPENAI_BASE_URL behind the config's back), the raw answer parsed by us (compatible servers
differ; each user checks the shape it needs), and failures described in one way, without
the key (servers echo it in 401 messages) or a password in the URL.

The ``openai`` package (~20 MB with httpx and pydantic, 0.3 s to import) is imported when an
endpoint is made, not with this module: a daemon without one never loads it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from memoryd.errors import MemorydError

if TYPE_CHECKING:
    import openai

DEFAULT_BASE_URL = "https://api.openai.com/v1"
MAX_MESSAGE_CHARS = 300
NO_KEY = "not-needed"  # local servers ignore the key, the client insists on one


def safe_url(url: str) -> str:
    """The URL without user:password, for messages."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


class Endpoint:
    def __init__(
        self,
        what: str,
        base_url: str,
        api_key: str,
        timeout: float,
        max_retries: int,
        error: type[MemorydError],
    ) -> None:
        """``what`` names it in messages ("embedding endpoint"); ``error``: the class of
        what its failures raise."""
        import openai

        self.what = what
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.timeout = timeout
        self.max_retries = max_retries
        self.error = error
        self._secret = api_key  # kept only to scrub it from messages
        self._sdk = openai
        try:
            self.client = openai.OpenAI(
                base_url=self.base_url,
                api_key=api_key or NO_KEY,
                timeout=timeout,
                max_retries=max_retries,
            )
        except openai.OpenAIError as exc:
            raise error(f"cannot configure the {what} client: {self.scrub(exc)}") from None

    def __str__(self) -> str:
        return f"{self.what} {safe_url(self.base_url)}"

    def call_json(self, create: Callable[[openai.OpenAI], Any]) -> Any:
        """The parsed JSON body of ``create(client)`` (a ``with_raw_response`` call)."""
        try:
            body = create(self.client).http_response.content
        except self._sdk.OpenAIError as exc:
            raise self.error(self.describe(exc)) from None
        try:
            return json.loads(body)
        except ValueError:
            raise self.garbage("the answer is not JSON") from None

    def garbage(self, reason: str) -> MemorydError:
        return self.error(f"{self} returned garbage: {reason}")

    def describe(self, exc: openai.OpenAIError) -> str:
        sdk, retries = self._sdk, f"after {self.max_retries} retries"
        if isinstance(exc, sdk.APITimeoutError):
            return f"{self} timed out (timeout {self.timeout:g}s, {retries})"
        if isinstance(exc, sdk.APIConnectionError):
            return f"{self} unreachable (connection failed, {retries})"
        if isinstance(exc, sdk.APIStatusError):
            return f"{self} answered HTTP {exc.status_code} ({retries}): " + self.scrub(
                _error_text(exc)
            )
        return f"{self} failed: {type(exc).__name__}: {self.scrub(exc)}"

    def scrub(self, text: object) -> str:
        """One short line, and never the key."""
        out = str(text)
        if len(self._secret) >= 4:
            out = out.replace(self._secret, "***")
        out = " ".join(out.split())
        return out if len(out) <= MAX_MESSAGE_CHARS else out[: MAX_MESSAGE_CHARS - 3] + "..."

    def close(self) -> None:
        self.client.close()


def _error_text(exc: openai.APIStatusError) -> str:
    """The server's own message when it sent the usual {"error": {"message": ...}}."""
    body = exc.body
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return str(err["message"])
        if isinstance(err, str):
            return err
    return str(exc.message)
