"""Text handling shared by every node family and by the evaluation: normalisation (``normalise``),
scripts and the question/answer language (``scripts``), words and CJK bigrams (``words``),
numbers and quantities with units (``numbers``) and stop words loaded from the package's
word lists (``stopwords``). It imports nothing of the node families, so all of them may
import it.
"""
