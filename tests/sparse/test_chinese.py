"""Chinese BM25 (jieba words and character bigrams) on cmrc2018-trial items."""

from __future__ import annotations

import pytest

from modrag_nodes.retrieval.bm25 import BM25Index, search_texts
from modrag_nodes.retrieval.tokenizers import Tokenizer
from modrag_studio.engine.core.datatypes import Chunk
from tests.sparse.helpers import read_jsonl, read_qrels

pytestmark = pytest.mark.shared_data


@pytest.fixture
def cmrc(shared_data):
    folder = shared_data / "cmrc2018-trial"
    docs = read_jsonl(folder / "corpus.jsonl", limit=100)  # jieba is slow on busy machines
    chunks = [Chunk(chunk_id=d["_id"], doc_id=d["_id"], text=d["text"]) for d in docs]
    qrels = read_qrels(folder / "qrels" / "trial.tsv")
    kept = {c.doc_id for c in chunks}
    queries = [q for q in read_jsonl(folder / "queries.jsonl", limit=60)
               if qrels[q["_id"]] & kept]
    assert len(queries) >= 40
    return chunks, queries, qrels


@pytest.mark.parametrize("kind", ["jieba", "bigram"])
def test_chinese_tokenizers_find_the_paragraph_in_the_top5(cmrc, kind):
    chunks, queries, qrels = cmrc
    index = BM25Index.build(chunks, tokenizer=Tokenizer(kind=kind))
    hits = [bool({r.doc_id for r in search_texts(index, [q["text"]], top_k=5)}
                 & qrels[q["_id"]]) for q in queries]
    assert sum(hits) / len(hits) >= 0.9, f"{kind}: {sum(hits)}/{len(hits)} in the top 5"


def test_regex_words_are_the_wrong_tool_for_chinese(cmrc):
    # \w+ swallows a whole Chinese clause as one token: far fewer questions match at all.
    chunks, queries, qrels = cmrc
    regex = BM25Index.build(chunks, tokenizer=Tokenizer(kind="regex"))
    bigram = BM25Index.build(chunks, tokenizer=Tokenizer(kind="bigram"))

    def found(index: BM25Index) -> int:
        return sum(bool({r.doc_id for r in search_texts(index, [q["text"]], top_k=5)}
                        & qrels[q["_id"]]) for q in queries)

    assert found(regex) < found(bigram)
