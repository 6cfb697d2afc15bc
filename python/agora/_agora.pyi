"""agora's Python package, `import agora`: the method registry, every method as an
in-memory ask/tell strategy, studies on a store (the same files the `agora` CLI and
server use), simulated respondents and benchmarks, `reproduce`, and the engines behind
the `agora.optuna` samplers. This is the extension module `agora._agora`; the
Python-side package (`python/agora`) wraps it and adds the Optuna samplers.

Errors: bad input raises `ValueError` (an unknown name `KeyError`, a wrong type
`TypeError`) naming the field and the allowed values; nothing panics across the
boundary. Model fits and acquisition searches release the GIL.
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol, Union, overload

__version__: str

class _SupportsToList(Protocol):
    """Anything with `tolist()`: a numpy array or scalar."""

    def tolist(self) -> Any: ...

# A user-unit parameter value: a float (real, log-real), an int (integer) or a str (choice).
_Value = Union[float, int, str]
# A sequence of finite floats: a list, a tuple or a 1-D numpy array.
_Floats = Union[Sequence[float], _SupportsToList]
# Rows of finite floats: a list of sequences or a 2-D numpy array.
_Rows = Union[Sequence[Sequence[float]], Sequence[_SupportsToList], _SupportsToList]
# A point in user units: a dict by parameter name or a sequence in parameter order (box);
# a candidate's name or row index (candidate table).
_Point = Union[Mapping[str, Any], Sequence[Any], _SupportsToList, str, int]
# A media entry: {"type": "text", "text": ...}, {"type": "url", "url": ...},
# {"type": "file", "content_type": ..., "data": bytes} or {"type": "file", "path": ...}.
_Media = Union[Mapping[str, Any], None]
# An option picked: its letter ("A", "B", ...), its index (0, 1, ...), its name, or "tie"
# (None is "tie" too).
_Pick = Union[int, str, None]

_ParamKind = Literal["real", "log_real", "integer", "categorical"]
_QueryKind = Literal["evaluate", "compare", "group_vote", "group_rate", "hessian"]
_AnswerKind = Literal["values", "choice", "tie", "votes", "matrix", "other"]
_Outcome = Literal["answered", "recorded", "duplicate"]

class Param:
    """One parameter of a box space. Make one with `agora.real`, `agora.log_real`,
    `agora.integer` or `agora.categorical`."""

    @property
    def name(self) -> str:
        """The parameter's name."""
    @property
    def kind(self) -> _ParamKind:
        """`"real"`, `"log_real"`, `"integer"` or `"categorical"`."""
    @property
    def bounds(self) -> tuple[float, float] | tuple[int, int] | None:
        """The bounds `(lo, hi)` of a real, log-real or integer parameter (`None` for a
        categorical one)."""
    @property
    def choices(self) -> list[str] | None:
        """The choices of a categorical parameter (`None` otherwise)."""
    def __eq__(self, other: object) -> bool: ...
    def __ne__(self, other: object) -> bool: ...
    def __repr__(self) -> str: ...

def real(name: str, lo: float, hi: float) -> Param:
    """A real parameter in `[lo, hi]`."""

def log_real(name: str, lo: float, hi: float) -> Param:
    """A positive real parameter in `[lo, hi]`, searched on a log scale (rates, scales)."""

def integer(name: str, lo: int, hi: int) -> Param:
    """An integer parameter in `[lo, hi]` (both included)."""

def categorical(name: str, choices: Sequence[str]) -> Param:
    """A categorical parameter: one of `choices` (distinct strings)."""

class Space:
    """What a strategy searches: a box of parameters, or a finite table of candidates.

    `Space([agora.real("x", -5, 10), agora.categorical("c", ["a", "b"])])` is a box;
    `Space.candidates(names, features)` a table whose rows are the only options.
    """

    def __init__(self, params: Sequence[Param]) -> None:
        """A box of `params` (a list of `agora.Param`), in order."""
    @staticmethod
    def reals(bounds: Sequence[tuple[float, float]]) -> Space:
        """A box of real parameters `x0, x1, ...` with the given `(lo, hi)` bounds."""
    @staticmethod
    def candidates(names: Sequence[str], features: _Rows) -> Space:
        """A finite table of candidates: one name per row and feature rows (all the same
        length, in `[0, 1]`; scale them first) that the models compare options by."""
    @staticmethod
    def from_json(text: str) -> Space:
        """The space from its JSON form (as `to_json` writes it and study files store it)."""
    def to_json(self) -> str:
        """The JSON form."""
    @property
    def kind(self) -> Literal["box", "candidates"]:
        """`"box"` or `"candidates"`."""
    @property
    def params(self) -> list[Param]:
        """The parameters of a box (empty for a candidate table)."""
    @property
    def names(self) -> list[str]:
        """The parameter names of a box, or the candidate names of a table."""
    @property
    def dim(self) -> int:
        """Unit-cube coordinates the models see (a categorical parameter takes one per choice)."""
    def to_user(self, u: _Floats) -> dict[str, _Value]:
        """A unit-cube point in user units: a dict from parameter name to value (a candidate
        table has no unit points; its options are rows)."""
    def to_unit(self, point: _Point) -> list[float]:
        """A point in user units (a dict by name, or values in parameter order; for a table, a
        candidate's name or row index) as unit-cube coordinates."""
    def __len__(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...
    def __ne__(self, other: object) -> bool: ...
    def __repr__(self) -> str: ...

class Query:
    """What a strategy asks: evaluate options, compare them, a group vote or rating, or a
    Hessian. Options are in user units (`points`); `asked` says who answers."""

    @property
    def id(self) -> int:
        """The query's id (echoed by its answer)."""
    @property
    def kind(self) -> _QueryKind:
        """`"evaluate"`, `"compare"`, `"group_vote"`, `"group_rate"` or `"hessian"`."""
    @property
    def points(self) -> list[dict[str, Any]]:
        """The options, in user units: a dict from parameter name to value for a box, or
        `{"index": i, "name": ...}` for a row of a candidate table."""
    @property
    def unit_points(self) -> list[list[float]]:
        """The options as unit-cube coordinates (candidate rows: their features)."""
    @property
    def asked(self) -> list[str]:
        """Who is asked: the participants of a group query in ballot order, `[rater]` for a
        comparison that names its rater (BOAP: the property compared), else `[]`."""
    @property
    def rater(self) -> str | None:
        """The rater a comparison names (BOAP: the abstract property compared), else `None`."""
    @property
    def channel(self) -> Literal["public", "private"] | None:
        """`"public"` or `"private"` for a group query, else `None`."""
    def to_dict(self) -> dict[str, Any]:
        """The query as a dict (the JSON form `agora ask --json` and the HTTP API use)."""
    def __repr__(self) -> str: ...

class Answer:
    """What came back for a query: values, a choice, a tie, votes or a matrix."""

    @property
    def query_id(self) -> int:
        """The id of the query answered."""
    @property
    def kind(self) -> _AnswerKind:
        """`"values"`, `"choice"`, `"tie"`, `"votes"` or `"matrix"`."""
    @property
    def values(self) -> list[float] | None:
        """The values (evaluations, or a group's ratings), else `None`."""
    @property
    def winner(self) -> int | None:
        """The index of the option chosen, else `None`."""
    @property
    def votes(self) -> list[int | None] | None:
        """Each agent's vote (an option index, or `None` for can't tell), else `None`."""
    @property
    def matrix(self) -> list[list[float]] | None:
        """The matrix's rows (a Hessian), else `None`."""
    def to_dict(self) -> dict[str, Any]:
        """The answer as a dict (its JSON form)."""
    def __repr__(self) -> str: ...

class Strategy:
    """A registered method's strategy, in memory: `ask()` the next query, `tell(...)` its
    answer. Same method, space, seed, participants, knobs and answers: same queries."""

    def __init__(
        self,
        method: str,
        space: Space,
        *,
        seed: int = 0,
        participants: Sequence[str] | None = None,
        **knobs: Any,
    ) -> None:
        """The strategy of `method` (a name or alias from `agora.methods()`) over `space`,
        seeded by `seed`, with `participants` (group members, parties) where the method
        needs them and any of its knobs as keywords."""
    @property
    def name(self) -> str:
        """The method's canonical short name (e.g. `gp-logei`)."""
    @property
    def space(self) -> Space:
        """The space searched."""
    @property
    def n_answered(self) -> int:
        """Number of queries answered so far."""
    def ask(self) -> Query:
        """The next query (asking again before telling returns the same open query). Model fits
        and acquisition searches run without the GIL."""
    def tell(
        self,
        answer: Answer | None = None,
        *,
        values: _Floats = ...,
        winner: _Pick = ...,
        tie: bool = ...,
        who: str | None = ...,
        vote: _Pick = ...,
        votes: Sequence[_Pick] = ...,
        rating: float = ...,
        ratings: _Floats = ...,
        matrix: _Rows = ...,
    ) -> None:
        """Tell the answer to the open query: an `agora.Answer` (from a respondent), or keywords
        in the shapes `agora tell` takes: `values=[...]` (evaluations; a group's ratings),
        `winner=` (an option's letter "A"/"B", index, or name; or "tie"), `tie=True`,
        `votes=[...]` (one per agent: letter, index or "tie"/None), `ratings=[...]`,
        `matrix=[[...]]` (a Hessian), `who=` (who answered a comparison). A refused answer
        raises and leaves the strategy as it was."""
    def best(self) -> dict[str, Any] | None:
        """The recommendation so far: `{"point": {...user units...}, "value": v}` (what the
        value means depends on the method: the best measured value, or the model's utility),
        or `None` before any answer."""
    def belief(self, points: Iterable[_Point]) -> list[tuple[float, float]] | None:
        """The model's belief at `points` (user units: dicts by name or sequences in parameter
        order; candidate names or rows): a list of `(mean, sd)`, or `None` when the method has
        no model that predicts at arbitrary points (yet)."""
    def agent_beliefs(self, points: Iterable[_Point]) -> list[list[tuple[float, float]]] | None:
        """For group methods: each agent's estimated utility at `points` (as `belief` takes them):
        a list per point of `(mean, sd)` per agent (`sbo`: its true, influence-free utility,
        beside `belief`'s welfare), or `None` when the method models no agents or has no model
        yet."""
    def __repr__(self) -> str: ...

class Study:
    """A study with people (or programs answering for them) on a store."""

    @property
    def name(self) -> str:
        """The study's name."""
    @property
    def participants(self) -> list[str]:
        """The participants, in ballot order."""
    @property
    def space(self) -> Space:
        """The space."""
    def spec(self) -> dict[str, Any]:
        """The study's spec (space, method with every knob, seed, participants) as a dict."""
    def ask(self, *, worker: str | None = None) -> Query | None:
        """The open query (after catching up with answers other processes stored), or `None`
        when the method could not propose one (`status()["stalled"]` says why).
        `worker=` (several workers on one `bo` study, as `agora ask --worker`): the query
        this worker holds, else one handed to it now (the open query nobody holds, else a
        new one the method proposes with the others' points pending); answer it with
        `tell(query=q.id, ...)`."""
    def tell(
        self,
        *,
        query: int | None = None,
        values: _Floats = ...,
        winner: _Pick = ...,
        tie: bool = ...,
        who: str | None = ...,
        vote: _Pick = ...,
        votes: Sequence[_Pick] = ...,
        rating: float = ...,
        ratings: _Floats = ...,
    ) -> _Outcome:
        """Answer the open query (or `query=` id: any open query, e.g. a worker's) with
        keywords in the shapes `agora tell` takes: `winner=` ("A", "B", an index, a name, or
        "tie"), `tie=True`, `values=[...]`, `who=` with `vote=` or `rating=` (one
        participant's ballot), `votes=[...]`, `ratings=[...]`. Returns `"answered"` (the
        strategy moved on), `"recorded"` (a ballot; others still to come) or `"duplicate"`
        (the same answer was stored before)."""
    def close(self) -> _Outcome:
        """Close the open group vote now: missing votes count as can't tell."""
    def status(self) -> dict[str, Any]:
        """The study at a glance (as `agora status --json`): answers, rounds per channel, the
        open query, the recommendation."""
    def best(self) -> dict[str, Any] | None:
        """The recommendation so far (as `agora best --json`), or `None`."""
    @overload
    def export(self, format: Literal["csv"] = "csv") -> str:
        """The log: `format="csv"` (one row per event, options in user units, as `agora
        export --format csv`) returns text; `format="json"` returns the spec and every event
        as a dict."""
    @overload
    def export(self, format: Literal["json"]) -> dict[str, Any]: ...
    @overload
    def export(self, format: str) -> str | dict[str, Any]: ...
    def import_data(self, data: str | Iterable[Mapping[str, Any]]) -> int:
        """Give the study earlier data before its first answer (as `agora study import`):
        evaluations (`bo` studies with GP-BO) or comparisons (`pairs`, `group-pairs`) in the
        study's units, either a list of dicts (`{"temperature": 22, "value": 3.5}`, or
        `{"winner": {...}, "loser": {...}}`) or the text of a CSV or JSON-lines file. Every
        row is checked first; a bad one raises `ValueError` naming its line (the n-th dict
        is line n) and parameter, and nothing is stored. The data stand in for the random
        start, do not count as answers, and the open question is asked again in their light.
        Returns the number of rows imported."""
    def enqueue(self, option: Mapping[str, Any]) -> None:
        """Put an option of your own (a dict of the parameters by name, in the study's units)
        into the next question after the open one (as `agora study enqueue`): GP-BO
        evaluates it; PBO compares it with its EUBO challenger."""
    def post_media(self, option: int, media: Mapping[str, Any], *, query: int | None = None) -> _Outcome:
        """Show media with option `option` of the open query (or of `query=`, an open query's
        id), as `agora study media` and `POST .../media` do: a box study's renderings. `media`
        takes the shapes `create_study(media=...)` takes. Returns `"recorded"`, or
        `"duplicate"` when the same media was shown before."""
    def media(self, option: int, *, query: int | None = None) -> dict[str, Any] | None:
        """The media shown with option `option` of the open query (or of `query=`): a dict in
        the shapes `post_media` takes (a file's `data` as bytes), or `None`."""
    def close_expired(self) -> _Outcome | None:
        """Close the open group vote if its time limit (`round_seconds`) has passed, as `agora
        serve` does every second: missing votes count as can't tell. Returns `"answered"`,
        or `None` when nothing was due."""
    def belief(self, points: Iterable[_Point]) -> list[tuple[float, float]] | None:
        """The study's model at `points` (user units, as `Strategy.belief` takes them): a list
        of `(mean, sd)`, or `None` when the method has no model that predicts at arbitrary
        points (yet). What the facilitator's belief panel shows."""
    def agent_beliefs(self, points: Iterable[_Point]) -> list[list[tuple[float, float]]] | None:
        """For group studies: each participant's estimated utility at `points`, a list per
        point of `(mean, sd)` per participant (in the study's order), or `None`."""
    @overload
    def plot(self, format: Literal["svg"] = "svg") -> str:
        """The facilitator's figure (as `agora plot`): the progress and, where the method has
        a model, its belief over the space. `format="svg"` returns SVG text, `"png"` PNG
        bytes; in a notebook, `IPython.display.SVG(study.plot())`."""
    @overload
    def plot(self, format: Literal["png"]) -> bytes: ...
    @overload
    def plot(self, format: str) -> str | bytes: ...
    def tokens(self) -> dict[str, Any]:
        """The facilitator's token, the renderer's (it may only post media, e.g. from a
        rendering job through `agora.client.post_media`) and each participant's, for the
        web page (`agora serve`)."""
    def __repr__(self) -> str: ...

def create_study(
    name: str,
    *,
    method: str = "pairs",
    space: Space,
    participants: Sequence[str] | None = None,
    seed: int = 0,
    description: str = "",
    storage: str = "agora.db",
    round_seconds: int | None = None,
    media: Sequence[_Media] | None = None,
    **knobs: Any,
) -> Study:
    """Create a study on `storage` (a file path, `sqlite:///path` or
    `postgresql://user:pass@host:port/db`; created if missing) and compute its first query. `method` is a study method (`bo`, `pairs`, `group-pairs`,
    `social`, `social-ratings`, `hpbo`, `boap`) or a registry name with one (`gp-ei`,
    `pbo-bald`, ...); `knobs` are its settings. `round_seconds`: a time limit for each group
    vote (1 s to a week), after which it closes itself (`Study.close_expired`; `agora serve`
    does it every second). `media`: for a candidate set, one entry (or `None`) per
    candidate, shown beside the options: `{"type": "text", "text": ...}`, `{"type": "url",
    "url": ...}`, `{"type": "file", "content_type": ..., "data": bytes}` or `{"type":
    "file", "path": ...}` (an image or sound, at most 1 MiB). Nothing is stored if any check
    fails."""

def load_study(name: str, *, storage: str = "agora.db") -> Study:
    """Open the study `name` on `storage`, replaying its log (exact resume)."""

def study_names(*, storage: str = "agora.db") -> list[str]:
    """The names of the studies on `storage`."""

def methods() -> list[dict[str, Any]]:
    """Every registered method as a dict: `name`, `aliases` (name → the knobs it fixes),
    `description`, `feedback`, `spaces`, `participants` (`None`, or role / min / max) and
    `knobs` (name → kind, allowed, default, doc; `default` is `None` for a required knob)."""

class Problem:
    """A simulated respondent: `answer(query)` gives what a person or a measurement would.
    Make one with `agora.problems.make(name, ...)` (see `agora.problems()`)."""

    @property
    def name(self) -> str:
        """The problem's name."""
    @property
    def space(self) -> Space:
        """The space its queries' options live in."""
    @property
    def optimum(self) -> float | None:
        """The objective's global maximum (test functions; `None` for groups)."""
    @property
    def agents(self) -> int:
        """The number of agents of a group (0 for a test function): name them as the
        strategy's `participants`."""
    def answer(self, query: Query) -> Answer:
        """The answer to `query` (seeded: the same queries give the same answers). Raises
        `ValueError` for a kind of query this respondent cannot answer."""
    def __call__(self, point: _Point) -> float:
        """The noiseless objective at `point` (user units: a dict by name or a sequence),
        test functions only."""
    def regret(self, point: _Point) -> float:
        """Simple regret at `point`: the optimum minus the true value (test functions only)."""
    def __repr__(self) -> str: ...

class HomPolicy:
    """The role-based HOM policy of DSBO (role assignment, role interaction, message passing)
    for `agents` agents with local states of length `state_dim` and actions of length
    `action_dim` in (-1, 1).

    `size`: `"med"` (3 layers x 4 neurons, the paper's default) or `"sm"` (1 x 2);
    `ablation`: `"full"`, `"no_ra"` (role assignment off), `"no_ri"` (role interaction off)
    or `"ctde"` (one MLP shared by all agents); `rounds`: message-passing rounds;
    `max_role_heads`: the cap on learned role heads. The parameter vector θ has `dim`
    entries; DSBO searches the box [-1, 1]^dim."""

    def __init__(
        self,
        agents: int,
        state_dim: int,
        action_dim: int,
        *,
        size: str = "med",
        ablation: str = "full",
        rounds: int = 2,
        max_role_heads: int = 4,
    ) -> None: ...
    @property
    def dim(self) -> int:
        """Length of θ."""
    @property
    def agents(self) -> int:
        """Number of agents."""
    @property
    def state_dim(self) -> int:
        """Length of each agent's local state."""
    @property
    def action_dim(self) -> int:
        """Length of each agent's action."""
    def slices(self) -> list[tuple[str, int, int]]:
        """The named slices of θ: `[(name, start, end), ...]` (e.g. `theta_g_v`, the edge net)."""
    def act(self, theta: Sequence[float], states: Sequence[Sequence[float]]) -> list[list[float]]:
        """One action per agent (lists of `action_dim` numbers in (-1, 1)) for one local state
        per agent (`states[agent]`, `state_dim` numbers each), under parameters `theta`."""
    def surrogate_hessian(
        self,
        theta: Sequence[float],
        visited: Sequence[Sequence[Sequence[float]]],
        *,
        seed: int = 0,
        reduction: str = "abs_projection",
    ) -> list[list[float]]:
        """The surrogate policy Hessian (DSBO §4.5): the relaxed policy's exact Hessian with
        respect to θ at every visited joint state (`visited[t][agent]`), combined over the
        actions (`reduction`: `"abs_projection"`, the default, `"projection"` or `"abs_sum"`)
        and averaged over the states; a `dim` x `dim` list of rows. Releases the GIL."""
    def __repr__(self) -> str: ...

def problem_list() -> list[dict[str, Any]]:
    """The problems `make` knows, as dicts: `name`, `kind` (`function` or `group`), `dim`, and
    `optimum` (functions) or `agents` (groups)."""

def make_problem(
    name: str,
    *,
    noise: float = 0.0,
    rater: str = "probit",
    sigma: float | None = None,
    seed: int = 0,
) -> Problem:
    """A simulated respondent by name: a test function (`hartmann6`, `branin`, `ackley7`, ...;
    values with Gaussian `noise` sd, comparisons by a `rater` — `"probit"` or
    `"bradley_terry"` with noise `sigma` — and Hessians), or `group:<task>` for a Social BO
    group (`group:toy`, `group:thermal`, ...). Seeded by `seed`."""

def reproduce(suite: str | None = None, *, quick: bool = True, out: str = "out/reproduce") -> str:
    """Run a paper's suite (or all of them with `suite=None`) as `agora reproduce` does,
    writing records, figures and `report.md` under `out`; returns the report's path."""

def suites() -> list[str]:
    """The suites `reproduce` runs."""

class GpSuggester:
    """GP-BO on observations told to it one by one: `observe(unit_x, y)` (larger `y` is
    better), then `suggest()` the unit-cube point maximizing the acquisition. Same seed and
    same observations in the same order: same suggestion."""

    def __init__(
        self,
        space: Space,
        *,
        acquisition: str = "logei",
        beta: float = 2.0,
        seed: int = 0,
        raw_samples: int = 512,
        restarts: int = 10,
    ) -> None:
        """An engine over `space` with `acquisition` (`logei`, `ei`, `pi`, `ucb` with `beta`),
        scoring `raw_samples` Sobol points before refining the best `restarts` of them."""
    def observe(self, unit_x: _Floats, y: float) -> None:
        """Add an observation: a unit-cube point of the space and its value (finite; larger is
        better)."""
    @property
    def n_observed(self) -> int:
        """Observations so far."""
    def suggest(self) -> list[float]:
        """The unit-cube point (snapped to the space's integer and categorical values) that
        maximizes the acquisition of the GP fitted to the observations."""
    def belief(self, unit_points: _Rows) -> list[tuple[float, float]]:
        """The GP's posterior `(mean, sd)` at unit-cube points."""

class PreferenceSuggester:
    """Preferential BO on comparisons told to it: `add_option(unit_x)` the options compared,
    `prefer(winner, loser)` / `tie(a, b)` by option index, then `suggest()` a new option
    (EUBO against the option it will be compared with, in a trust region around it)."""

    def __init__(self, space: Space, *, seed: int = 0) -> None:
        """An engine over `space`, seeded by `seed`."""
    def add_option(self, unit_x: _Floats) -> int:
        """Add an option (a unit-cube point; one within 1e-4 of an earlier option is that
        option) and return its index."""
    def prefer(self, winner: int, loser: int) -> None:
        """Option `winner` was preferred to option `loser` (the model is refitted)."""
    def tie(self, a: int, b: int) -> None:
        """Options `a` and `b` could not be told apart (counted; no preference)."""
    @property
    def n_options(self) -> int:
        """Options so far."""
    @property
    def ties(self) -> int:
        """Ties so far."""
    def best(self) -> int | None:
        """The index of the option with the highest posterior mean (`None` before any
        preference)."""
    def reference(self) -> int | None:
        """The option a new suggestion is compared with by default: the standing option (one
        that won its latest comparison) with the highest posterior mean, else `best()`
        (`None` before any preference)."""
    def suggest(self, reference: int | None = None) -> list[float]:
        """A new option, as a unit-cube point snapped to the space's grid, to be compared with
        option `reference` (default: `reference()`)."""
    def belief(self, unit_points: _Rows) -> list[tuple[float, float]]:
        """The latent utility's posterior `(mean, sd)` at unit-cube points."""
