"""Loading a machine's results folder (and a results root) into typed structures.

Every document is read and checked before anything is written anywhere, so a bad file
stops a command with one clear line and leaves existing output alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpuplan_schema.payloads import CeilingsPayload, EnvironmentPayload, WorkloadPayload
from gpuplan_schema.schema import Document, DocumentError, ForeignDocument, load_document

SINGLETON_KINDS = ("environment", "ceilings", "dataloader")  # one per machine; workload documents are one per workload
# Workload documents of the same GPU type collected on another host (another rental), kept beside a machine's own
# under OTHER_HOSTS/<host>/: the repeatability check compares them. Loaded and checked like the machine's own.
OTHER_HOSTS = "diagnostics"


@dataclass(frozen=True)
class MachineResults:
    machine: str
    folder: Path
    documents: dict[str, Document]  # by file stem: "environment", "ceilings", "workload-gpt-small"…
    other_hosts: tuple[tuple[str, WorkloadPayload], ...] = ()  # (host, workload) timed on another host, same GPU
    skipped: tuple[Path, ...] = ()  # JSON files in the folder that are no gpuplan documents (ForeignDocument)

    @property
    def environment(self) -> EnvironmentPayload | None:
        return self._singleton("environment")

    @property
    def ceilings(self) -> CeilingsPayload | None:
        return self._singleton("ceilings")

    def _singleton(self, kind: str):  # noqa: ANN202 - the payload type depends on the kind
        return next((d.payload for d in self.documents.values() if d.kind == kind), None)

    @property
    def workloads(self) -> list[WorkloadPayload]:
        return [d.payload for d in self.documents.values() if d.kind == "workload"]

    @property
    def gpu_name(self) -> str | None:
        """The GPU of the environment, else of the ceilings, else the one the ddp document's matmul ran on (a
        folder of multi-GPU documents alone, as a run across nodes writes)."""
        env = self.environment
        if env and env.gpus:
            return env.gpus[0].name
        ceilings = self.ceilings
        if ceilings and ceilings.device == "cuda":
            return ceilings.device_name
        ddp = self._singleton("ddp")
        if ddp and ddp.device == "cuda" and ddp.matmul:
            return ddp.matmul[0].gpu
        return None

    @property
    def nodes(self) -> tuple[int, int] | None:
        """(nodes, GPUs per node) where a multi-GPU document ran across several nodes, else None."""
        for kind in ("ddp", "collectives"):
            payload = self._singleton(kind)
            layout = payload.launch.nodes if payload else None
            if layout and layout.nodes > 1:
                return layout.nodes, layout.gpus_per_node
        return None

    @property
    def device_label(self) -> str:
        """What ran the measurements, for one-line summaries: the GPU (with its count, or its nodes × GPUs), or the
        CPU model."""
        if self.gpu_name and self.nodes:
            nodes, per_node = self.nodes
            return f"{nodes} nodes × {per_node} {self.gpu_name}"
        if self.gpu_name:
            count = len(self.environment.gpus) if self.environment else 1
            return f"{count}× {self.gpu_name}" if count > 1 else self.gpu_name
        if self.environment:
            return f"CPU: {self.environment.cpu.model}"
        return self.ceilings.device_name if self.ceilings else "unknown device"


def iter_document_paths(folder: Path) -> list[Path]:
    """The JSON documents of a machine folder, in a stable order. Temp files of atomic writes are
    skipped, and so are symlinks: a results folder must not lead the reader out of itself."""
    return sorted(p for p in folder.glob("*.json") if not p.name.startswith(".") and not p.is_symlink())


def load_machine(folder: Path) -> MachineResults:
    folder = Path(folder)
    if not folder.is_dir():
        what = "a file" if folder.exists() else "no such directory"
        raise DocumentError(folder, "", f"not a results folder ({what})")
    paths = iter_document_paths(folder)
    if not paths:
        # a results root (one folder per machine) is the usual mistake: name its machines
        machines = sorted(p.name for p in folder.iterdir() if p.is_dir() and iter_document_paths(p))
        hint = f"; it holds machine folders: give one of {', '.join(machines)}" if machines else \
            "; run `gpuplan collect` first"
        raise DocumentError(folder, "", f"holds no result documents (*.json){hint}")
    documents: dict[str, Document] = {}
    machine = None
    skipped = []
    for path in paths:
        try:
            doc = load_document(path)
        except ForeignDocument:
            skipped.append(path)  # a package.json, someone's notes: not ours, said once by the caller
            continue
        if machine is not None and doc.machine != machine:
            raise DocumentError(path, "machine", f"{doc.machine!r} differs from {machine!r} in the same folder")
        if doc.kind in SINGLETON_KINDS and any(d.kind == doc.kind for d in documents.values()):
            raise DocumentError(path, "kind", f"a second {doc.kind!r} document in one machine folder")
        machine = doc.machine
        documents[path.stem] = doc
    if machine is None:
        names = ", ".join(p.name for p in skipped[:3]) + (", …" if len(skipped) > 3 else "")
        raise DocumentError(folder, "", f"holds no gpuplan documents: {len(skipped)} JSON file"
                                        f"{'s' if len(skipped) > 1 else ''} without a gpuplan envelope ({names})")
    return MachineResults(machine, folder, documents, load_other_hosts(folder), tuple(skipped))


def load_other_hosts(folder: Path) -> tuple[tuple[str, WorkloadPayload], ...]:
    """The workload documents under `folder`/OTHER_HOSTS/<host>/, each checked as any document is (a bad one stops
    the command with its one line, as a bad document of the machine's own does)."""
    out = []
    for path in sorted((folder / OTHER_HOSTS).glob("*/workload-*.json")):
        if path.is_symlink() or path.parent.is_symlink():
            continue
        doc = load_document(path)
        if not isinstance(doc.payload, WorkloadPayload):
            raise DocumentError(path, "kind", f"{doc.kind!r}: only workload documents are kept for another host")
        out.append((path.parent.name, doc.payload))
    return tuple(out)


def load_results_root(root: Path, skipped: list[Path] | None = None) -> list[MachineResults]:
    """Every machine folder under `root` (symlinks are not followed out of the root). A folder whose JSON files are
    all foreign (no gpuplan envelope) is no machine folder: it is skipped, its files added to `skipped` where given,
    with each machine's own foreign files."""
    root = Path(root)
    if not root.is_dir():
        raise DocumentError(root, "", "not a results root (no such directory)")
    machines = []
    for folder in _machine_folders(root):
        foreign = _all_foreign(folder)
        if foreign:
            (skipped if skipped is not None else []).extend(foreign)
            continue
        machines.append(load_machine(folder))
        (skipped if skipped is not None else []).extend(machines[-1].skipped)
    if not machines:
        raise DocumentError(root, "", "holds no machine folders with results")
    return machines


def _all_foreign(folder: Path) -> list[Path]:
    """The folder's JSON files where every one of them is foreign (no gpuplan document among them); else []."""
    paths = iter_document_paths(folder)
    for path in paths:
        try:
            load_document(path)
        except ForeignDocument:
            continue
        except DocumentError:
            return []  # a broken gpuplan document: load_machine names it
        return []
    return paths


def load_machine_and_root(folder: Path) -> tuple[MachineResults, list[MachineResults]]:
    """A machine folder and every machine beside it in its results root (the folder's parent), each loaded
    once: the planner cites measurements of the others (multi-GPU efficiency). A broken sibling stops the
    command with its one-line error; nothing is planned from a root that is only partly read."""
    folder = Path(folder)
    machine = load_machine(folder)
    root = folder.resolve().parent
    siblings = [load_machine(f) for f in _machine_folders(root) if f.resolve() != folder.resolve()]
    return machine, [machine, *siblings]


def _machine_folders(root: Path) -> list[Path]:
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith("."))
    return [f for f in folders if iter_document_paths(f)]


def load_machines(path: Path, skipped: list[Path] | None = None) -> list[MachineResults]:
    """A machine folder (holds *.json) or a results root (holds machine folders); foreign JSON files skipped
    into `skipped` where given."""
    path = Path(path)
    if path.is_dir() and iter_document_paths(path):
        machine = load_machine(path)
        (skipped if skipped is not None else []).extend(machine.skipped)
        return [machine]
    return load_results_root(path, skipped)
