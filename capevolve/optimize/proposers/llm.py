"""The ``llm`` proposer: GEPA-style reflective mutation of one component file through an
OpenAI-compatible endpoint. A bad answer or a failed endpoint is a no_change keeping the raw
answer; a prompt too long for the context is never blamed on max_tokens."""

from __future__ import annotations

import time
from typing import Any

from capevolve.errors import ConfigError, ModelError
from capevolve.kinds import ModelFailure
from capevolve.models import Meter, ModelClient, ModelSettings
from capevolve.optimize.proposers import llm_prompt as prompts
from capevolve.optimize.proposers.base import Proposal, ProposalContext, ProposerConfig, Spend
from capevolve.optimize.proposers.llm_settings import LLMSettings, Select, api_key, load_settings

RAW_CHARS = 20_000  # how much of a raw answer is stored with a no_change


class LLMProposer:
    """Reflective mutation of one component file per proposal."""

    def __init__(self, settings: LLMSettings, model: ModelSettings,
                 api_key: str | None = None) -> None:
        self.settings = settings
        self.model = model
        self.api_key = api_key
        self.name = f"llm:{settings.model}"

    def propose(self, ctx: ProposalContext) -> Proposal:
        """Rewrite one component file of ``ctx.workdir``."""
        t0 = time.monotonic()
        texts = prompts.component_files(ctx.parent_dir, ctx.files, ctx.protected,
                                        self.settings.max_file_chars)
        if not texts:
            return Proposal(changed=False, blocker="no editable text file in the parent "
                            f"(none under {self.settings.max_file_chars} chars outside the "
                            "protected paths)")
        cluster = prompts.target_cluster(ctx.diagnosis, ctx.focus)
        path = prompts.choose_file(texts, ctx.iteration, self.settings.select == Select.CLUSTER,
                                   cluster)
        batch = prompts.examples(ctx.diagnosis, cluster, self.settings.minibatch, ctx.seed)
        messages = prompts.build_messages(path, texts[path], batch, cluster,
                                          prompts.rejected_attempts(ctx.ledger, path),
                                          ctx.instructions)
        detail: dict[str, Any] = {"model": self.settings.model, "file": path,
                                  "examples": len(batch),
                                  "cluster": None if cluster is None
                                  else cluster.get("signature")}
        meter = Meter()  # one per proposal: proposals may run at once
        client = ModelClient(self.model, meter, self.api_key)
        try:
            response = client.complete({"messages": messages, "seed": ctx.seed,
                                        "response_format": prompts.ANSWER_FORMAT})
        except ModelError as exc:
            detail["http_attempts"] = meter.counts["attempts"]
            detail["usage"] = meter.snapshot()
            why = (f"the prompt does not fit the model's context ({exc})"
                   if exc.failure == ModelFailure.CONTEXT_LENGTH else
                   f"llm endpoint ({exc.failure}): {exc}")
            return Proposal(changed=False, blocker=why, detail=detail,
                            spend=_spend(meter, t0), focus=path)
        detail["http_attempts"] = meter.counts["attempts"]
        detail["usage"] = meter.snapshot()
        spend, answer, finish = _spend(meter, t0), *self._read(response)
        detail["finish_reason"] = finish
        improved = None if finish == "length" else prompts.parse_answer(answer)
        if improved is not None and texts[path].endswith("\n") and not improved.endswith("\n"):
            improved += "\n"
        if improved is None or improved == texts[path]:
            detail["raw_answer"] = (answer or "")[:RAW_CHARS]
            why = (f"the answer repeats {path} unchanged" if improved is not None else
                   f"unparseable answer: it {self._cut(response)}" if finish == "length" else
                   "unparseable answer: it has no single non-empty "
                   f"{prompts.OPEN}...{prompts.CLOSE} block")
            return Proposal(changed=False, spend=spend, detail=detail, focus=path, blocker=why)
        target = prompts.inside(ctx.workdir, path)
        if target is None:
            return Proposal(changed=False, spend=spend, detail=detail, focus=path,
                            blocker=f"{path} in the working copy is a symlink: not written")
        target.write_text(improved, encoding="utf-8")
        detail["chars"] = {"before": len(texts[path]), "after": len(improved)}
        return Proposal(changed=True, spend=spend, detail=detail, focus=path)

    def _cut(self, response: dict[str, Any]) -> str:
        """Why an answer stopped at ``length``: max_tokens or the context window."""
        found = response.get("usage")
        usage: dict[str, Any] = found if isinstance(found, dict) else {}
        prompt, answer = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if type(answer) is int and answer < self.settings.max_tokens:
            window = self.settings.context_tokens
            return (f"was cut by the model's context window, not max_tokens: prompt {prompt} "
                    f"+ answer {answer} tokens"
                    + (f" (context_tokens {window})" if window else "")
                    + "; an unfinished answer is never applied")
        return (f"was cut at max_tokens={self.settings.max_tokens} (an unfinished answer is "
                "never applied)")

    def _read(self, response: dict[str, Any]) -> tuple[str | None, str | None]:
        """Answer text and finish reason (any response shape tolerated)."""
        choices = response.get("choices")
        choice: dict[str, Any] = choices[0] if isinstance(choices, list) and choices \
            and isinstance(choices[0], dict) else {}
        message = choice.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        finish = choice.get("finish_reason")
        return content if isinstance(content, str) else None, \
            finish if isinstance(finish, str) else None


def _spend(meter: Meter, t0: float) -> Spend:
    """Every attempt's tokens and priced cost (None when unknown)."""
    return Spend(tokens=meter.tokens, cost_usd=meter.cost_usd, wall_s=time.monotonic() - t0)


def build(options: str, config: ProposerConfig) -> LLMProposer:
    """The ``llm`` proposer of a spec's options; an endpoint that does not answer is
    refused unless ``probe=false``."""
    settings = load_settings(options, config.model)
    model, key = settings.model_settings(config.timeout_s), api_key(settings, config.env)
    if settings.probe:
        problem = ModelClient(model, api_key=key).probe(timeout_s=min(10.0, settings.timeout_s))
        if problem:
            raise ConfigError(f"--proposer llm: endpoint {settings.base_url}: {problem}")
    return LLMProposer(settings, model, key)
