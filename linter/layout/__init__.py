"""Layout search for ``trainlint suggest``: the parallel layouts of a run that fit in memory,
pass the launch-time rules and run fastest, by the estimator."""

from trainlint.layout.search import SearchError, SearchOptions, SearchResult, Suggestion, search
from trainlint.layout.space import DIMENSIONS, Layout

__all__ = ["DIMENSIONS", "Layout", "SearchError", "SearchOptions", "SearchResult", "Suggestion", "search"]
