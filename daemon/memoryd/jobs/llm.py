"""Chat completions against any OpenAI-compatible server (OpenAI, Ollama, vLLM, LM Studio...).

The client, its retries and the way failures read are openai_endpoint.py's (shared with
the embedding provider). Every answer is checked here, since compatible servers differ: a
200 that is not a chat completion is an error, as is a missing message. Whether the answer
is *finished* is the caller's question (``ChatAnswer.finished_text``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from memoryd.errors import Unavailable
from memoryd.openai_endpoint import Endpoint
from memoryd.runtime.config import LlmConfig, resolve_secret
from memoryd.secrets import redact

# finish_reason values that mean "the model ended its answer" across compatible servers.
FINISHED: Final = frozenset({"stop", "eos", "end_turn", "stop_sequence"})


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
            raise LlmError(
                f"the {what} was cut off by the token limit "
                f"(llm.max_output_tokens = {max_tokens}): not used"
            )
        if self.finish_reason not in FINISHED:
            raise LlmError(
                f"the {what} did not finish normally "
                f"(finish_reason {self.finish_reason!r}): not used"
            )
        if not self.content.strip():
            raise LlmError(f"the {what} is empty")
        return self.content


class LlmClient:
    def __init__(
        self, cfg: LlmConfig, env: Mapping[str, str], cancelled: threading.Event | None = None
    ) -> None:
        self.cfg = cfg
        self.calls = 0
        self.tokens = 0  # what the calls used (their usage, else the characters / 4)
        self._cancelled = cancelled
        self._endpoint = Endpoint(
            "LLM endpoint",
            cfg.base_url,
            resolve_secret(cfg.api_key, cfg.api_key_env, dict(env)),
            cfg.timeout,
            cfg.max_retries,
            LlmError,
        )
        self.base_url = self._endpoint.base_url

    def __repr__(self) -> str:
        return f"LlmClient({self._endpoint!s}, model={self.cfg.model!r})"

    def chat(self, system: str, user: str) -> ChatAnswer:
        if self._cancelled is not None and self._cancelled.is_set():
            raise LlmError("cancelled: the daemon is shutting down")
        if self.calls >= self.cfg.max_calls_per_run:  # the jobs plan below it; a backstop
            raise LlmError(
                f"this run made llm.max_calls_per_run ({self.cfg.max_calls_per_run})"
                " LLM calls already; raise it"
            )
        self.calls += 1
        user = redact(user).text  # no secret ever reaches a model (memoryd/secrets.py)
        payload = self._endpoint.call_json(
            lambda client: client.chat.completions.with_raw_response.create(
                model=self.cfg.model,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                # max_tokens, not max_completion_tokens: what compatible servers understand.
                max_tokens=self.cfg.max_output_tokens,
            )
        )
        self._count(payload, len(system) + len(user))
        return self._answer(payload)

    def _count(self, payload: Any, sent: int) -> None:
        usage = payload.get("usage") if isinstance(payload, dict) else None
        total = usage.get("total_tokens") if isinstance(usage, dict) else None
        if isinstance(total, int) and total >= 0:
            self.tokens += total
        else:
            choices = payload.get("choices") if isinstance(payload, dict) else None
            text = str(choices[0].get("message", {}).get("content") or "") if choices else ""
            self.tokens += (sent + len(text) + 3) // 4

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
            content = "".join(
                p.get("text", "")
                for p in content
                if isinstance(p, dict) and isinstance(p.get("text"), str)
            )
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise self._garbage("the message content is not text")
        reason = choice.get("finish_reason")
        model = payload.get("model")
        return ChatAnswer(
            content,
            reason if isinstance(reason, str) else None,
            model if isinstance(model, str) else self.cfg.model,
        )

    def _garbage(self, reason: str) -> LlmError:
        return LlmError(self._endpoint.garbage(reason).message)
