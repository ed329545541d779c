"""Chat completions against any OpenAI-compatible server (OpenAI, Ollama, vLLM, LM Studio...).

Retries with exponential backoff on 429, 5xx, timeouts and connection errors are the
official client's (``llm.max_retries``; it honours Retry-After). Every answer is checked
here, since compatible servers differ: a 200 that is not a chat completion is an error, as
is a missing message. Whether the answer is *finished* is the caller's question
(``ChatAnswer.finished_text``). The API key never appears in messages or logs.

The ``openai`` package (~20 MB with httpx and pydantic, 0.3 s to import) is imported when a
client is made, not with this module: a daemon without an LLM never loads it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from memoryd.errors import Unavailable
from memoryd.jobs.llm_config import safe_url
from memoryd.runtime.config import LlmConfig, resolve_secret

if TYPE_CHECKING:
    import openai

DEFAULT_BASE_URL: Final = "https://api.openai.com/v1"
# finish_reason values that mean "the model ended its answer" across compatible servers.
FINISHED: Final = frozenset({"stop", "eos", "end_turn", "stop_sequence"})
NO_KEY: Final = "not-needed"  # local servers ignore the key, the client insists on one


class LlmError(Unavailable):
    """The LLM could not give a usable answer (down, refused, garbage, cut off)."""


@dataclass(frozen=True)
class ChatAnswer:
    content: str
    finish_reason: str | None
    model: str

    def finished_text(self, what: str, max_tokens: int) -> str:
        """The content, if the model finished it and it is not empty; else LlmError."""
        if self.finish_reason == "length":
            raise LlmError(f"the {what} was cut off by the token limit "
                           f"(llm.max_output_tokens = {max_tokens}): not used")
        if self.finish_reason not in FINISHED:
            raise LlmError(f"the {what} did not finish normally "
                           f"(finish_reason {self.finish_reason!r}): not used")
        if not self.content.strip():
            raise LlmError(f"the {what} is empty")
        return self.content


class LlmClient:
    def __init__(self, cfg: LlmConfig, env: Mapping[str, str],
                 cancelled: threading.Event | None = None) -> None:
        self.cfg = cfg
        self.base_url = (cfg.base_url or DEFAULT_BASE_URL).rstrip("/")
        self.calls = 0
        self._cancelled = cancelled
        self._secret = resolve_secret(cfg.api_key, cfg.api_key_env, dict(env))
        import openai

        self._sdk = openai
        try:
            # base_url explicit: never $OPENAI_BASE_URL behind the config's back.
            self._client = openai.OpenAI(base_url=self.base_url,
                                         api_key=self._secret or NO_KEY,
                                         timeout=cfg.timeout, max_retries=cfg.max_retries)
        except openai.OpenAIError as exc:
            raise LlmError(f"cannot configure the LLM client: {self._scrub(exc)}") from None

    def __repr__(self) -> str:
        return f"LlmClient(base_url={safe_url(self.base_url)!r}, model={self.cfg.model!r})"

    def chat(self, system: str, user: str) -> ChatAnswer:
        if self._cancelled is not None and self._cancelled.is_set():
            raise LlmError("cancelled: the daemon is shutting down")
        if self.calls >= self.cfg.max_calls_per_run:  # the jobs plan below it; a backstop
            raise LlmError(f"this run made llm.max_calls_per_run ({self.cfg.max_calls_per_run})"
                           " LLM calls already; raise it")
        self.calls += 1
        try:
            raw = self._client.chat.completions.with_raw_response.create(
                model=self.cfg.model,
                messages=[{"role": "system", "content": system},
                          {"role": "user", "content": user}],
                # max_tokens, not max_completion_tokens: what compatible servers understand.
                max_tokens=self.cfg.max_output_tokens,
            )
            body = raw.http_response.content
        except self._sdk.OpenAIError as exc:
            raise LlmError(self._describe(exc)) from None
        try:
            payload = json.loads(body)
        except ValueError:
            raise self._garbage("the answer is not JSON") from None
        return self._answer(payload)

    def _answer(self, payload: Any) -> ChatAnswer:
        choices = payload.get("choices") if isinstance(payload, dict) else None
        if not isinstance(choices, list) or not choices:
            raise self._garbage("no 'choices' in the answer")
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise self._garbage("the first choice has no 'message'")
        content = message.get("content")
        if isinstance(content, list):  # some servers answer a list of content parts
            content = "".join(p.get("text", "") for p in content
                              if isinstance(p, dict) and isinstance(p.get("text"), str))
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise self._garbage("the message content is not text")
        reason = choice.get("finish_reason")
        model = payload.get("model")
        return ChatAnswer(content, reason if isinstance(reason, str) else None,
                          model if isinstance(model, str) else self.cfg.model)

    def _garbage(self, reason: str) -> LlmError:
        return LlmError(f"LLM endpoint {safe_url(self.base_url)} returned garbage: {reason}")

    def _describe(self, exc: openai.OpenAIError) -> str:
        where = f"LLM endpoint {safe_url(self.base_url)}"
        retries = f"{self.cfg.max_retries} retries"
        sdk = self._sdk
        if isinstance(exc, sdk.APITimeoutError):
            return f"{where} timed out (timeout {self.cfg.timeout:g}s, after {retries})"
        if isinstance(exc, sdk.APIConnectionError):
            return f"{where} unreachable (connection failed, after {retries})"
        if isinstance(exc, sdk.APIStatusError):
            return (f"{where} answered HTTP {exc.status_code} (after {retries}): "
                    f"{self._scrub(_error_text(exc))}")
        return f"{where} failed: {type(exc).__name__}: {self._scrub(exc)}"

    def _scrub(self, text: object) -> str:
        """Short, and never the key (servers echo it in 401 messages)."""
        out = str(text)
        if len(self._secret) >= 4:
            out = out.replace(self._secret, "***")
        out = " ".join(out.split())
        return out if len(out) <= 300 else out[:297] + "..."


def _error_text(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
    return str(exc.message)
