"""Where each answerable question's expected facts stand before the model: written in the
prompt it gets (after evidence focus and the budget), only in the fused top chunks, or
nowhere. No model call: a run up to the prompt node of ``basic_rag`` pointed at a corpus.

    .venv/bin/python bench/facts_in_prompt.py QUESTIONS.jsonl [NODE.PARAM=VALUE ...]

For example pkgdocs-dev: ``… ../shared/data/corpora/pkgdocs-dev/questions.jsonl
corpus.default=../shared/data/corpora/pkgdocs-dev/docs load.glob=*.md
store.collection=pkgdocs_dev kg.name=pkgdocs_dev`` (add ``prompt.context_budget_tokens=800``
to see what a smaller budget keeps). A fact counts when one of its spellings is in the text,
both normalised; every fact of a question must be there.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from modrag_nodes.text.normalise import normalise
from modrag_studio.commands.common import apply_overrides
from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.document import load
from modrag_studio.engine.run.executor import Executor

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    evalset, sets = sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:])
    doc = apply_overrides(load(ROOT / "sample_graphs" / "basic_rag.json"), sets)
    executor = Executor(default_registry(), cache=NodeCache())
    tally = {"prompt": 0, "fused only": 0, "nowhere": 0}
    tokens: list[int] = []
    for line in Path(evalset).read_text(encoding="utf-8").splitlines():
        question = json.loads(line) if line.strip() else None
        if not question or not question.get("answerable"):
            continue
        outputs = executor.run(doc, {"question": question["question"]},
                               target="prompt").node_outputs
        prompt = next(v["prompt"] for (node, _), v in outputs.items() if node == "prompt")
        fused = next(v["results"] for (node, _), v in outputs.items() if node == "fusion")
        in_prompt = normalise(" ".join(m.content for m in prompt.messages))
        in_fused = normalise(" ".join(s.chunk.text for s in fused))

        def written(text: str, facts: list[list[str]] = question["expected_facts"]) -> bool:
            return all(any(normalise(alias) in text for alias in fact) for fact in facts)

        where = ("prompt" if written(in_prompt) else "fused only" if written(in_fused)
                 else "nowhere")
        tally[where] += 1
        tokens.append(prompt.token_estimate)
        print(f"{question['id']}: {where} ({prompt.token_estimate} prompt tokens)")
    print(json.dumps({**tally, "mean prompt tokens": round(sum(tokens) / max(1, len(tokens)))}))


if __name__ == "__main__":
    main()
