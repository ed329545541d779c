"""A search's options (docs/protocol.md, ``search``), stated once: one row each in
:data:`OPTIONS`, saying how the option is spelled on the wire and in Python (its name), how
memctl spells it (its flags), what values it takes (its kind) and its help. The typed clients'
``search(query, **options)`` (typed by :class:`SearchOptions`), the wire params
(:func:`memoryd_client._params.search_params`), memctl's parser and its lean
``search --json`` path all read this table, each when it runs.

A new option is a row here and its field in :class:`SearchOptions` (a test holds the two
together), plus its daemon side (the ``search`` handler reads and checks it).

This module imports nothing at run time: ``memctl search --json`` reads it on every call.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import datetime as _dt
    from collections.abc import Iterable
    from typing import Final, TypedDict

    DateLike = _dt.date | str

    class SearchOptions(TypedDict, total=False):
        """The rows of :data:`OPTIONS` as a client's ``search`` keyword arguments, in the
        same order, each typed as its row's kind says (tests/client/test_search_options.py)."""

        max_results: int | None
        min_score: float | None
        mode: str | None
        fusion: str | None
        sources: str | Iterable[str] | None
        path_prefix: str | None
        since: DateLike | None
        until: DateLike | None
        fleet: bool
        include_superseded: bool
        project: str | Iterable[str] | None
        now: DateLike | None


# What values an option takes: memctl reads its flag with the kind's check, and the wire
# gets it as the kind says (None, or False for a flag, leaves it out: the daemon's default).
COUNT: Final = "count"  # an integer, at least 1
SCORE: Final = "score"  # a number in 0..1
TEXT: Final = "text"  # a string as given
DAY: Final = "day"  # a day: a date, or YYYY-MM-DD (the wire's form)
FLAG: Final = "flag"  # on when given; sent only when on
CHOICE: Final = "choice"  # one of a tuple of memoryd_client.search_terms, named by `choices`


class Option:
    """One search option. ``repeat``: memctl's flag may be given again and again, and the
    client takes one value or several (the wire's list)."""

    __slots__ = ("choices", "flags", "help", "kind", "metavar", "name", "repeat")

    def __init__(
        self,
        name: str,
        *flags: str,
        kind: str = TEXT,
        help: str,
        metavar: str | None = None,
        choices: str | None = None,
        repeat: bool = False,
    ) -> None:
        self.name = name
        self.flags = flags
        self.kind = CHOICE if choices else kind
        self.help = help
        self.metavar = metavar
        self.choices = choices
        self.repeat = repeat

    def __repr__(self) -> str:
        return f"Option({self.name!r}, {', '.join(map(repr, self.flags))}, kind={self.kind!r})"


OPTIONS: tuple[Option, ...] = (
    Option(
        "max_results",
        "-n",
        "--max-results",
        kind=COUNT,
        metavar="N",
        help="at most N results (default 6)",
    ),
    Option(
        "min_score",
        "--min-score",
        kind=SCORE,
        metavar="SCORE",
        help="drop results scoring below this, 0..1 (default 0.35)",
    ),
    Option(
        "mode", "--mode", choices="MODES", help="which signals rank the results (default hybrid)"
    ),
    Option(
        "fusion",
        "--fusion",
        choices="FUSIONS",
        help="how hybrid search combines them (default: the daemon's, weighted)",
    ),
    Option(
        "sources",
        "--source",
        choices="SOURCES",
        repeat=True,
        help="search this source (repeatable; default: the daemon's search.sources, memory)",
    ),
    Option(
        "path_prefix", "--path-prefix", metavar="PREFIX", help="only paths starting with PREFIX"
    ),
    Option(
        "since", "--since", kind=DAY, metavar="YYYY-MM-DD", help="only notes of this day or later"
    ),
    Option(
        "until", "--until", kind=DAY, metavar="YYYY-MM-DD", help="only notes of this day or earlier"
    ),
    Option(
        "fleet",
        "--fleet",
        kind=FLAG,
        help="every workspace of every host in the fleet (fleet mode)",
    ),
    Option(
        "include_superseded",
        "--include-superseded",
        kind=FLAG,
        help="also lines a newer line with the same <!-- key: --> superseded",
    ),
    Option(
        "project",
        "--project",
        repeat=True,
        metavar="KEY",
        help="an active project (repeatable; e.g. github.com/owner/repo): its tagged notes "
        "rank higher, another project's a little lower",
    ),
    Option(
        "now",
        "--now",
        kind=DAY,
        metavar="YYYY-MM-DD",
        help='the day "yesterday" or "last week" in the query counts from (default today)',
    ),
)


_by_name: tuple[tuple[Option, ...], dict[str, Option]] = ((), {})


def by_name() -> dict[str, Option]:
    """The rows of :data:`OPTIONS` by name (made again when the table is not the one seen)."""
    global _by_name
    if _by_name[0] is not OPTIONS:
        _by_name = (OPTIONS, {option.name: option for option in OPTIONS})
    return _by_name[1]
