"""The engine protocol: what every engine subpackage answers, and the record its allocation yields.

An engine (``kvmath.engines.<engine>``) owns, for one Architecture:

1. its settings (``settings()``: one frozen record with the engine's own defaults, built from the
   common arguments ``max_ctx`` / ``max_num_seqs`` / ``tp`` / format plus engine keywords; a keyword of
   another engine is refused naming that engine);
2. its allocation (``allocate()``): the objects the engine really creates, vLLM's per-layer KV specs
   and blocks, llama.cpp's cache objects and streams, transformers' cache tensors;
3. its layer groups (``layer_groups()``): the allocation summed per kind of layer. ``kvmath.derive``
   only adds these up, so its totals cannot disagree with the engine's own figures or log lines;
4. its launch line (``parse_launch()``): the engine's own command line as a user pastes it, into a
   :class:`Launch` with the chosen release's defaults (``programs`` names the command words it answers);
5. its verdict (``verdict()``): per-device :class:`Term` s in bytes, the outcome (boots / refused with
   the engine's own message / out of memory), the engine's start-up lines, in one :class:`Verdict`
   record for every engine. The solvers of :mod:`kvmath.solve` are written once over it, varying the
   settings the engine names in ``context_setting`` / ``seqs_setting`` / ``offload_setting``.

Dispatch by layer kind goes through :meth:`Engine.rule`: an engine without a rule for a kind of
layer answers with one error naming the engine and the kind.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from ..errors import KvMathError, choices
from ..formats import DTYPE_BYTES, KVFormat
from ..model.specs import FULL, LINEAR, SLIDING, Architecture

GROUP_KINDS = ("attention", "mla", "gdn", "mamba2", "kda", "mamba1", "conv", "lightning", "none", "padding",
               "compressed", "rglru", "cross_attention")
"""``LayerGroup.kind`` values: softmax attention, MLA latent, Gated DeltaNet, Mamba-2, Kimi Delta
Attention state, Mamba-1 state, short-conv state (LFM2), lightning-attention state (MiniMax-Text-01), blocks
without a cache (a Falcon-H1 hybrid layer gives an attention group and a Mamba-2 group over the same index), vLLM's
padding layers (empty group slots that still take their share of every block), ``compressed``: DeepSeek-V4's
window plus compressor tensors (transformers only), ``rglru``: RecurrentGemma's conv and RG-LRU state
(transformers only), and ``cross_attention``: K / V over an encoder's output, per sequence, not growing with the
decoder's context (Whisper; transformers only)."""


@dataclass(frozen=True)
class StateTensor:
    """One recurrent-state tensor per sequence and rank: its name, shape (elements) and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * DTYPE_BYTES[self.dtype]


@dataclass(frozen=True)
class LayerGroup:
    """Layers whose cache the engine allocates alike, and what that allocation holds, per card.

    - ``bytes``: what the group's allocation holds for the whole deployment (all its layers, all
      sequences or streams), exact bytes per card. This is the engine's figure, not a formula.
    - ``bytes_per_token``: K + V bytes one token takes in one layer (attention, MLA); 0 for state.
    - ``cells``: token slots per stream and layer the engine allocates (vLLM: blocks x block size one
      request may hold; llama.cpp: cells; transformers: cached positions); ``streams``: sequences or
      llama.cpp streams.
    - ``state``: the recurrent-state tensors of one layer and sequence; ``state_bytes_per_seq`` what
      the engine holds per layer and sequence for them (vLLM: the padded state blocks one request
      holds, llama.cpp: its R and S rows, snapshots included).
    - ``kind``: one of ``GROUP_KINDS``; ``layer_type`` the HF layer type the engine treats the layers
      as (a sliding layer whose window the engine does not apply is ``full_attention`` here, and its
      ``description`` says so).
    """

    layer_type: str
    layers: tuple[int, ...]
    description: str
    bytes: int
    kind: str = "attention"
    kv_heads_per_rank: int = 0
    bytes_per_token: int = 0
    cells: int = 0
    streams: int = 0
    state: tuple[StateTensor, ...] = ()
    state_bytes_per_seq: int = 0
    owns_cache: bool = True
    kv_format: str = ""

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def growing(self) -> bool:
        """True when the term grows with context (full attention and MLA), False when it is bounded."""
        return self.layer_type == FULL and self.owns_cache

    @property
    def sliding(self) -> bool:
        return self.layer_type == SLIDING and self.owns_cache

    @property
    def is_state(self) -> bool:
        return self.layer_type == LINEAR and self.owns_cache


# --- the budget protocol: one record for every engine ------------------------------------------------------

OUTCOMES = ("boots", "refused", "oom")
"""``Verdict.outcome``: the engine starts and serves; it stops at start-up with its own message
(a configuration or memory check); it runs out of memory (at load, profile or the first batch)."""


@dataclass(frozen=True)
class Term:
    """One per-device memory term, exact bytes.

    - ``name``: a stable id (``weights``, ``kv_cache``, ``activation_peak``, ``cuda_graphs``, ``non_torch``,
      ``compute_buffer``, ``cuda_context`` ...), the same across engines where the thing is the same;
    - ``exact``: True when it is the engine's own allocation (a pool, a cache, a buffer the engine sizes by
      rule), False when derived term by term or fitted from what the engine measures at start-up;
    - ``source``: the rule, with the engine file and release it follows.
    """

    name: str
    bytes: int
    exact: bool = True
    source: str = ""

    def to_json(self) -> dict:
        return {"name": self.name, "bytes": self.bytes, "exact": self.exact, "source": self.source}


@dataclass(frozen=True)
class Device:
    """One device of a deployment: its memory as the runtime reports it and the terms on it.

    ``limit_bytes`` is what the engine lets itself use (vLLM: ``total x gpu_memory_utilization``; SGLang:
    its static fraction; llama.cpp: the free memory after the driver's context); it defaults to the
    capacity. ``used_bytes`` sums the terms; ``spare_bytes`` = limit - used (negative: short by that)."""

    name: str
    capacity_bytes: int
    terms: tuple[Term, ...]
    limit_bytes: int | None = None

    @property
    def used_bytes(self) -> int:
        return sum(t.bytes for t in self.terms)

    @property
    def limit(self) -> int:
        return self.capacity_bytes if self.limit_bytes is None else self.limit_bytes

    @property
    def spare_bytes(self) -> int:
        return self.limit - self.used_bytes

    def term(self, name: str) -> int:
        """The bytes of the term ``name`` (0 when the device has none)."""
        return sum(t.bytes for t in self.terms if t.name == name)

    def to_json(self) -> dict:
        return {"name": self.name, "capacity_bytes": self.capacity_bytes, "limit_bytes": self.limit,
                "used_bytes": self.used_bytes, "spare_bytes": self.spare_bytes,
                "terms": [t.to_json() for t in self.terms]}


@dataclass(frozen=True)
class Launch:
    """A parsed launch line: what ``Engine.parse_launch`` reads from the engine's own flags.

    - ``engine``: the engine's name; ``model``: the model as given (a kvmath id, a Hub id, a path);
    - ``settings``: the engine's settings keywords (its own names), the release's defaults filled in;
    - ``card``: the card as named, or None with ``device_bytes`` (the memory of any device, by flag);
    - ``release``: the release whose rules apply; ``notes``: flags ignored, defaults taken, in words;
    - ``argv``: the line as given (program words removed)."""

    engine: str
    model: str | None
    settings: Mapping[str, Any]
    card: str | None = None
    device_bytes: int | None = None
    release: str = ""
    notes: tuple[str, ...] = ()
    argv: tuple[str, ...] = ()

    def with_settings(self, **changes) -> "Launch":
        """The same launch with some settings changed (the solvers' one way to vary a launch)."""
        return replace(self, settings={**self.settings, **changes})


@dataclass(frozen=True)
class Verdict:
    """What an engine does with a launch: one record for every engine (see ``VERDICT_FIELDS``).

    ``devices`` are per device (per tensor-parallel rank, llama.cpp's devices and host); ``outcome`` is one
    of ``OUTCOMES`` and ``message`` the engine's own words when it is not ``boots``; ``log_lines`` the
    start-up lines the engine prints, word for word; ``pool_tokens`` the tokens its KV pool holds (vLLM's
    "GPU KV cache size", SGLang's ``max_total_num_tokens``, llama.cpp's cells); ``detail`` the engine's own
    record (not in the JSON; its ``to_dict()`` is, under ``engine_detail``, when it has one)."""

    engine: str
    release: str
    model: str
    outcome: str
    devices: tuple[Device, ...]
    message: str | None = None
    log_lines: tuple[str, ...] = ()
    pool_tokens: int | None = None
    context: int | None = None
    max_num_seqs: int | None = None
    notes: tuple[str, ...] = ()
    detail: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {choices(OUTCOMES)}, got {self.outcome!r}")

    @property
    def boots(self) -> bool:
        return self.outcome == "boots"

    def to_json(self) -> dict:
        """The JSON every front door prints (``VERDICT_FIELDS`` documents each key)."""
        out = {"engine": self.engine, "release": self.release, "model": self.model, "outcome": self.outcome,
               "message": self.message, "context": self.context, "max_num_seqs": self.max_num_seqs,
               "pool_tokens": self.pool_tokens, "devices": [d.to_json() for d in self.devices],
               "log_lines": list(self.log_lines), "notes": list(self.notes), "units": "bytes"}
        to_dict = getattr(self.detail, "to_dict", None)
        if callable(to_dict):
            out["engine_detail"] = to_dict()
        return out


VERDICT_FIELDS = {
    "engine": "the engine's name (vllm, sglang, llama.cpp)",
    "release": "the release (or build) whose rules were applied",
    "model": "the model as named on the line",
    "outcome": "boots | refused (the engine stops at start-up with its own message) | oom (out of memory)",
    "message": "the engine's own refusal or out-of-memory text; null when it boots",
    "context": "the context length the launch serves (max_model_len, --context-length, -c), tokens",
    "max_num_seqs": "the sequences served at once (max_num_seqs, --max-running-requests, -np)",
    "pool_tokens": "tokens the KV pool holds (vLLM GPU KV cache size, SGLang max_total_num_tokens, llama.cpp cells)",
    "devices[].name": "the device as the engine logs it",
    "devices[].capacity_bytes": "the device's memory as the runtime reports it, bytes",
    "devices[].limit_bytes": "what the engine lets itself use (utilisation or fraction applied), bytes",
    "devices[].used_bytes": "the sum of the device's terms, bytes",
    "devices[].spare_bytes": "limit_bytes - used_bytes (negative: short by that), bytes",
    "devices[].terms[]": "name, bytes, exact (the engine's own allocation) or derived, source (rule and release)",
    "log_lines": "the engine's start-up lines, word for word",
    "notes": "flags ignored, defaults taken, assumptions, in words",
    "units": "always 'bytes': every size in this record is an integer number of bytes",
    "engine_detail": "the engine's own record (fields documented by the engine: kvmath-fit --json-schema)",
    "answers.largest_context": "the largest context that boots with the other settings unchanged (solver), tokens",
    "answers.most_sequences": "the most sequences served at once that boot at this context (solver)",
    "answers.smallest_offload": "the smallest offload setting (llama.cpp --n-cpu-moe) that fits, or null",
}
"""Every key of ``Verdict.to_json()`` and of the front door's ``answers``, with its meaning and unit."""


class Engine(ABC):
    """The rules of one engine. See the module docstring for the three questions it answers."""

    name = ""
    label = ""
    """How the engine is written in prose and messages (``vLLM``)."""
    version = ""
    formats: tuple[str, ...] = ()
    setting_names: tuple[str, ...] = ()
    """Keyword arguments :meth:`settings` accepts besides the common ones (its own names)."""

    # --- layer-kind dispatch ------------------------------------------------------------------------
    rules: dict[str, str] = {}
    """Layer kind (a spec class's ``kind``: ``attention``, ``mla``, ``gdn`` ...) -> name of the method that
    handles it."""

    def rule(self, layer, arch: Architecture):
        """The bound method handling ``layer``'s kind; KvMathError naming engine and kind if none."""
        method = self.rules.get(layer.kind)
        if method is None:
            raise KvMathError(
                f"{self.name} has no rule for {type(layer).__name__} layers ({arch.name}, layer {layer.index}); "
                f"kinds it handles: {choices(self.rules)}")
        return getattr(self, method)

    # --- the three questions --------------------------------------------------------------------------
    @abstractmethod
    def settings(self, arch: Architecture, *, max_ctx: int | None, max_num_seqs: int, tp: int,
                 kv_format: str | None, cache_type_k: str | None, cache_type_v: str | None, **kw) -> Any:
        """The engine's settings record for these arguments (engine keywords in ``kw``)."""

    @abstractmethod
    def allocate(self, arch: Architecture, settings) -> Any:
        """What the engine allocates for ``arch`` under ``settings`` (its own record type)."""

    @abstractmethod
    def layer_groups(self, arch: Architecture, allocation) -> tuple[LayerGroup, ...]:
        """The allocation summed per group of alike layers; the groups' ``bytes`` add up to it."""

    @abstractmethod
    def cache_format(self, allocation) -> KVFormat:
        """The cache format the allocation used."""


    # --- the launch line and the verdict (the budget protocol) -------------------------------------------
    programs: tuple[tuple[str, ...], ...] = ()
    """The command words of the engine's launch lines (``("vllm", "serve")``); the front door removes them."""

    context_setting = ""
    """The settings keyword of the context length the solvers vary (``max_model_len``, ``n_ctx``)."""
    seqs_setting = ""
    """The settings keyword of the sequences served at once (``max_num_seqs``, ``n_parallel``)."""
    offload_setting = ""
    """The settings keyword of an offload count (llama.cpp's ``n_cpu_moe``), or empty."""
    json_fields: dict[str, str] = {}
    """The engine's own ``engine_detail`` JSON keys, documented."""

    def parse_launch(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> Launch:
        """The engine's launch line (command words removed) as a :class:`Launch`; ``env`` is the environment
        the engine would read (the commands pass ``os.environ``; the API passes nothing by default).

        Raises KvMathError for a flag of another engine, a flag that changes memory in a way kvmath does not
        model, or a bad value, naming the flag."""
        raise KvMathError(f"{self.name} has no launch-line reader in kvmath")

    def launch_for(self, words: Sequence[str], argv: Sequence[str], env: Mapping[str, str] | None = None) -> Launch:
        """The launch of a pasted line whose command words were ``words`` (``("llama-cli",)``): engines whose
        rules differ by program override it; the default is :meth:`parse_launch` of ``argv``."""
        return self.parse_launch(argv, env)

    def verdict(self, launch: Launch) -> Verdict:
        """What the engine does with ``launch``: per-device terms, outcome, message, log lines. Raises
        KvMathError for input the engine's rules cannot price."""
        raise KvMathError(f"{self.name} has no memory budget in kvmath (only its cache)")

    def for_solving(self, launch: Launch) -> Launch:
        """The launch the solvers vary: the default is ``launch``; an engine that changes a launch at start-up by
        itself (llama.cpp's ``--fit``) returns it with that step off, so booting stays monotone in each setting."""
        return launch

    def range_of(self, launch: Launch, setting: str) -> tuple[int, int, int]:
        """``(lowest, highest, step)`` the solvers search for ``setting`` (context: 1 to the model's limit)."""
        raise KvMathError(f"{self.name} names no search range for {setting}")

    def front_door(self, words: Sequence[str], argv: Sequence[str]) -> int | None:
        """An engine whose command line is its own program (flags the generic path cannot carry yet) runs it
        here on the launch line ``words + argv`` and returns its exit status; None (the default) sends the line
        through :meth:`parse_launch`, :meth:`verdict` and the solvers."""
        return None

    def launch_flags(self) -> dict[str, list[str]]:
        """The flags of this engine's launch line kvmath reads, by what it does with them (``{"priced": [...],
        "ignored (no memory effect)": [...], ...}``): the front door's ``-h`` / ``--help`` text
        (:meth:`launch_help`). Engines override it; the default names none."""
        return {}

    def launch_help(self, words: Sequence[str], front_door_flags: Sequence[str] = ()) -> str:
        """The text ``kvmath-fit <words> --help`` prints: the line's form, the flags kvmath reads
        (:meth:`launch_flags`), the front door's own options (``front_door_flags``: kvmath.fit passes its
        ``FRONT_DOOR_FLAGS``) and the exit statuses."""
        import textwrap

        lines = [f"usage: kvmath-fit {' '.join(words)} [{self.label} flags ...] [--card NAME | --device-memory SIZE] "
                 "[--json] [--no-solve]", "",
                 f"Prices a {self.label} launch line as pasted: the memory per device and whether it boots.", ""]
        for what, flags in self.launch_flags().items():
            lines.append(f"{self.label} flags {what}:")
            lines += textwrap.wrap(", ".join(sorted(flags)), 110, initial_indent="  ", subsequent_indent="  ",
                                   break_on_hyphens=False)
        lines += ["", "front-door options: " + ", ".join(front_door_flags) + " (--card: a card name as nvidia-smi, "
                  "rocm-smi or PyTorch print it; --device-memory: any device's memory, e.g. 24GiB)",
                  "exit status: 0 boots, 1 does not boot, 2 bad input, 3 internal error"]
        return "\n".join(lines)

    def render(self, verdict: Verdict, answers: Mapping[str, Any]) -> str:
        """The text answer of the front door (engines override it with their own wording)."""
        return render_verdict(verdict, answers)

    # --- tensor parallelism ---------------------------------------------------------------------------
    def tp_problem(self, arch: Architecture, tp: int) -> str | None:
        """Why this engine cannot split ``arch`` over ``tp`` ranks, or None if it can."""
        if tp != 1:
            return f"{self.name} has no tensor parallelism in kvmath's rules (tp must be 1, got {tp})"
        return None

    def check_tp(self, arch: Architecture, tp: int) -> None:
        """Raise KvMathError naming the problem and the valid TP sizes if ``tp`` is not possible."""
        problem = self.tp_problem(arch, tp)
        if problem:
            raise KvMathError(f"{problem}; valid TP for {arch.name} on {self.name}: {choices(valid_tp(arch, self))}")

    # --- command line ---------------------------------------------------------------------------------
    cli_title = ""

    def add_cli_flags(self, group) -> list[str]:
        """Add the engine's own launch flags to an argparse group; return their ``dest`` names.

        Flags are added with ``default=argparse.SUPPRESS`` so the CLI can tell which were given.
        """
        return []

    def cli_block(self, derivation, extra: dict):
        """The engine's own start-up figures for ``kvmath``'s answer, from the allocation the derivation sums:
        ``(text lines, JSON dict)``, or None when the engine prints nothing of its own."""
        return None

    def settings_from_cli(self, args: dict) -> dict:
        """Map the given engine flags (``dest -> value``) to :meth:`settings` keywords."""
        return dict(args)

    def env_settings(self, env) -> dict:
        """:meth:`settings` keywords the engine's own launcher takes from its environment, read from the
        mapping ``env`` a command passes (the library never reads ``os.environ``). None by default."""
        return {}


def valid_tp(arch: Architecture, engine: Engine, candidates=(1, 2, 4, 8, 16)) -> list[int]:
    """The tensor-parallel sizes among ``candidates`` the engine accepts for this architecture."""
    return [tp for tp in candidates if engine.tp_problem(arch, tp) is None]


def unknown_settings(engine: Engine, given: dict, others: dict[str, tuple[str, ...]]) -> None:
    """Refuse keywords ``engine`` does not take: one line naming the engine a keyword belongs to."""
    bad = sorted(set(given) - set(engine.setting_names))
    if not bad:
        return
    owners = {k: [e for e, names in others.items() if k in names] for k in bad}
    foreign = [k for k in bad if owners[k]]
    if foreign:
        k = foreign[0]
        raise KvMathError(f"{k} is a {' / '.join(owners[k])} setting, not a {engine.name} one; "
                          f"{engine.name} settings: {choices(engine.setting_names)}")
    raise KvMathError(f"unknown {engine.name} setting(s) {choices(bad)}; valid: {choices(engine.setting_names)}")


def merge_empty(groups: list[LayerGroup]) -> tuple[LayerGroup, ...]:
    """Layers without a cache of one type and description become one group."""
    out: list[LayerGroup] = []
    seen: dict[tuple, int] = {}
    for g in groups:
        if g.owns_cache:
            out.append(g)
            continue
        key = (g.layer_type, g.description, g.kind)
        if key in seen:
            prev = out[seen[key]]
            out[seen[key]] = LayerGroup(prev.layer_type, prev.layers + g.layers, prev.description, 0,
                                        kind=prev.kind, owns_cache=False)
        else:
            seen[key] = len(out)
            out.append(g)
    return tuple(out)


UNCHECKED_MODEL_TYPES = {
    "vllm": {
        "hrm_text": "vLLM 0.24's hrm_text.py (how it lays out the H / L cycles' caches) was not read",
        "gpt_neo": "vLLM 0.24 has no GPT-Neo model file, and whether its Transformers backend serves GPT-Neo's "
                   "mask-windowed local layers was not read",
        "codegen": "vLLM 0.24 has no CodeGen model file, and whether its Transformers backend serves CodeGen was "
                   "not read",
    },
    "llama.cpp": {
        "gpt_neo": "no llama.cpp architecture for GPT-Neo was read",
        "codegen": "no llama.cpp architecture for CodeGen was read",
        "granite_swa": "its sliding-window pattern in llama.cpp (b10514, ggml-org/llama.cpp#25505) was not read",
        "granitemoe_swa": "its sliding-window pattern in llama.cpp (b10514, ggml-org/llama.cpp#25505) was not read",
        "ministral": "which llama.cpp converter takes this type, and whether it keeps the window, was not read",
        "olmo_hybrid": "no llama.cpp architecture for OLMo Hybrid (Gated DeltaNet + attention) was read",
        "zamba2": "no llama.cpp architecture for Zamba2 (shared attention blocks over Mamba-2) was read",
        "bailing_hybrid": "no llama.cpp architecture for Ling 3.0 (bailing_hybrid: KDA + MLA) was read",
        "lfm3": "no llama.cpp architecture for LFM3 (short convolutions, sliding and full attention) was read",
        "hrm_text": "no llama.cpp architecture for HRM-Text was read",
        "aria_text": "no llama.cpp architecture for Aria's text decoder was read",
        "cohere_compass_text": "no llama.cpp architecture for Cohere Compass's text decoder was read",
    },
}
"""engine -> {model_type: why} for families whose layers kvmath reads exactly (transformers' rules) but whose
cache this engine's source was not read for: :func:`require_kinds` refuses them for that engine in one line."""


def require_kinds(engine: str, arch: Architecture, kinds: tuple[str, ...]) -> None:
    """Refuse ``arch`` when a layer's ``kind`` is not one of ``kinds`` (the kinds ``engine`` has rules for):
    KvMathError naming the engine, the layer's spec class, the model and the kinds it handles. Engines whose
    plan reads layers directly call it where the plan starts, so a new kind is refused, never skipped. A family
    whose allocation on ``engine`` kvmath has not modelled is refused first, with the family rule's reason
    (``Architecture.engine_refusals``: MiMo-V2-Flash on vLLM and llama.cpp, Step 3.5 / 3.7 on llama.cpp), and so
    is a model type in :data:`UNCHECKED_MODEL_TYPES` for ``engine``, naming why."""
    reason = dict(arch.engine_refusals).get(engine)
    if reason:
        raise KvMathError(f"{engine}: kvmath does not price {arch.model_type} ({arch.name}): {reason}")
    why = UNCHECKED_MODEL_TYPES.get(engine, {}).get(arch.model_type)
    if why:
        raise KvMathError(f"{engine}: kvmath does not price model_type {arch.model_type} ({arch.name}): {why}")
    for layer in arch.layers:
        if layer.kind not in kinds:
            note = KIND_NOTES.get((engine, layer.kind))
            why = f" ({note})" if note else ""
            raise KvMathError(
                f"{engine} has no rule for {type(layer).__name__} layers ({arch.name}, model_type {arch.model_type}, "
                f"layer {layer.index}){why}; kinds it handles: {choices(kinds)}")


KIND_NOTES = {
    ("vllm", "compressed"): "DeepSeek-V4's compressed attention: vLLM 0.24 allocates a compressed MLA-style cache per "
                  "compress ratio, a separate sliding-window cache and compressor state caches "
                  "(vllm/models/deepseek_v4/attention.py, compressor.py), a layout kvmath does not model",
}
"""(engine, layer kind) -> why the engine's rules leave the kind out, appended to :func:`require_kinds`' refusal."""



def render_verdict(v: Verdict, answers: Mapping[str, Any]) -> str:
    """A plain text form of a verdict: one line per device term, the outcome and the solver answers."""
    from ..units import GiB

    lines = [f"{v.engine} {v.release}: {v.model}"]
    for d in v.devices:
        lines.append(f"  {d.name}: {d.capacity_bytes / GiB:.2f} GiB, limit {d.limit / GiB:.2f} GiB")
        for t in d.terms:
            lines.append(f"    {t.name:<22} {t.bytes / GiB:>9.2f} GiB  {'exact' if t.exact else 'derived'}")
        spare = d.spare_bytes
        lines.append(f"    {'spare' if spare >= 0 else 'short':<22} {abs(spare) / GiB:>9.2f} GiB")
    lines.append(f"Verdict: {v.outcome}" + (f": {v.message}" if v.message else ""))
    for k, val in answers.items():
        lines.append(f"{k.replace('_', ' ').capitalize()}: {val if val is not None else 'none'}")
    lines += [f"  {line}" for line in v.log_lines]
    lines += [f"Note: {n}" for n in v.notes]
    return "\n".join(lines)
