"""The studio's composition root: every feature of the main window, built in one place.

``MainWindow`` owns the editor, the canvas, the run controller, the docks, the menus and the
settings; ``compose`` builds the features from them, in the order of ``StudioFeatures``'
fields, and returns them as typed fields (``window.features.run``, ``.evidence_debugger``,
...). Each feature is a class given what it needs: the window as the ``StudioShell`` protocol
(``ui/canvas/protocols.py``, checked once here) and the features it depends on, by argument.
No feature looks another up on the window.

The order is the order things appear in the menus, toolbars and docks:

1. ``run``: Run / Run to node / Re-run / Cancel, the run bar, overlays, inspector, timeline;
2. ``evidence_debugger``: the evidence dock and its citation navigation (needs ``run``);
3. ``preflight``: Run > Check Models and Servers, the problems panel's "not ready" rows;
4. ``cache_status``: the cache size in the status bar;
5. ``trust_prompt``: asks before the first run of a received graph; trusts saved graphs;
6. ``delete_guard``: asks when a store stopped before deleting most of its collection;
7. ``evaluation_sets``: the evaluation-set dock and the Evaluation menu (needs ``run``);
8. ``variants``: the Variants menu and switcher (needs ``run``);
9. ``generation``, ``tuning`` and ``scorecards``: Evaluation > Generate evaluation set…,
   Tune… and Score this folder… (need 7 and 8);
10. ``studio_ux``: the start page, the graph settings dock, the Help menu;
11. ``live_run``: elapsed time and progress on running nodes (needs ``run``);
12. ``node_flags``: bypass, pinned outputs, reroute points (needs ``run``);
13. ``editor_extras``: minimap, zoom, the node menu, wire drops (needs 1, 10 and 12);
14. ``index``: Run > Index Corpus… (needs ``run``);
15. ``model_memory``: Run > Models in Memory…, what the run process holds and Unload;
16. ``node_details``: a node's inputs | params | outputs of the last run (double-click or
    Enter on a node; needs ``run``'s inspector);
17. ``history``: records every run (the caller around the run) and the History dock (needs
    ``run``, ``variants`` and ``evaluation_sets``);
18. ``playground``: the chat over the graph, each turn a run in the history (needs ``run``
    and ``history``);
19. ``subgraphs``: Edit > Make / Expand / Open Subgraph, component files (the palette's
    Components, their adder ``window.adders["component"]``, Save as / Update from / Detach),
    the node menu's subgraph entries, a collapsed node's state during a run (needs 1 and 13);
20. ``trace_export``: Run > Trace Export…, the OTLP setting the run controller gives to
    every run;
21. ``run_problems``: what each run warned about, as Problems entries and node badges;
22. ``new_from_folder``: File > New Graph from Folder… and the start page's button (needs
    10 and 14);
23. ``answer_safety``: Edit > Make Answers Safe (a grounding check and a refusal after an
    answer the problems panel lists as unchecked).

What will run is computed in one place: ``variants.applied`` (the active variant applied to
the base), handed to ``run`` here; Run, Run to node, Re-run, Run set, Index and the window
title all read it.

The chains around a run and a save are explicit lists, filled here:

- pre-run guards, ``window.controller.guards``: the trust prompt (more guards go after it;
  ``RunController.run`` asks each in order and starts only when every one allows);
- after a run: the delete guard answers ``run_finished`` and may run again (through the
  guards); pre-flight never blocks a run, it badges what is not ready before the user runs;
- after a save, ``window.after_save``: the trust prompt trusts the saved file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from modrag_studio.ui.canvas.editor_extras import EditorExtras
from modrag_studio.ui.canvas.node_flags import NodeFlags
from modrag_studio.ui.canvas.protocols import AfterSave, StudioShell, require
from modrag_studio.ui.evaluate.evalset_panel import EvaluationSets
from modrag_studio.ui.evaluate.generate_dialog import EvalsetGeneration
from modrag_studio.ui.evaluate.scorecard_dialog import Scorecards
from modrag_studio.ui.evaluate.tune_dialog import Tuning
from modrag_studio.ui.evaluate.variants import VariantsController
from modrag_studio.ui.history.feature import RunHistoryFeature
from modrag_studio.ui.history.playground import PlaygroundDock
from modrag_studio.ui.inspection.evidence_debugger import EvidenceDebugger
from modrag_studio.ui.inspection.node_detail import NodeDetails
from modrag_studio.ui.run.controller import RunController
from modrag_studio.ui.run.delete_guard import DeleteGuard
from modrag_studio.ui.run.index_dialog import IndexAction
from modrag_studio.ui.run.live import LiveRun
from modrag_studio.ui.run.model_memory import ModelMemory
from modrag_studio.ui.run.preflight import Preflight
from modrag_studio.ui.run.run_problems import RunProblems
from modrag_studio.ui.run.trace_export import TraceExport
from modrag_studio.ui.run.trust_prompt import TrustPrompt
from modrag_studio.ui.shell.answer_safety import AnswerSafety
from modrag_studio.ui.shell.cache_status import CacheSizeLabel
from modrag_studio.ui.shell.new_from_folder import NewFromFolder
from modrag_studio.ui.shell.run_features import RunFeatures
from modrag_studio.ui.shell.studio_ux import StudioUX
from modrag_studio.ui.subgraphs.actions import PALETTE_PREFIX, SubgraphActions


class ComposedWindow(StudioShell, Protocol):
    """The main window as the composition root builds on it: the shell, its run controller
    and the chains it fills (``MainWindow`` satisfies it; named here, so this module never
    imports the window module that imports it)."""

    controller: RunController
    after_save: list[AfterSave]
    adders: dict[str, Callable[[str, tuple[float, float]], str]]


@dataclass(frozen=True)
class StudioFeatures:
    """The features of one window, in the order they are built (see the module docstring)."""

    run: RunFeatures
    evidence_debugger: EvidenceDebugger
    preflight: Preflight
    cache_status: CacheSizeLabel
    trust_prompt: TrustPrompt
    delete_guard: DeleteGuard
    evaluation_sets: EvaluationSets
    variants: VariantsController
    generation: EvalsetGeneration
    tuning: Tuning
    scorecards: Scorecards
    studio_ux: StudioUX
    live_run: LiveRun
    node_flags: NodeFlags
    editor_extras: EditorExtras
    index: IndexAction
    model_memory: ModelMemory
    node_details: NodeDetails
    history: RunHistoryFeature
    playground: PlaygroundDock
    subgraphs: SubgraphActions
    trace_export: TraceExport
    run_problems: RunProblems
    new_from_folder: NewFromFolder
    answer_safety: AnswerSafety


def compose(window: ComposedWindow) -> StudioFeatures:
    """Build every feature of ``window`` and fill its run and save chains."""
    require(window, ComposedWindow, "the studio window")
    shell: StudioShell = window
    run = RunFeatures(shell, window.controller)
    evidence_debugger = EvidenceDebugger(shell, run)
    run.presenter.narrators.append(evidence_debugger.narrator)
    run.traces.attributions.append(evidence_debugger.attribution_for)
    preflight = Preflight(shell)
    cache_status = CacheSizeLabel(window)
    trust_prompt = TrustPrompt(shell)
    window.controller.guards.append(trust_prompt)
    window.after_save.append(trust_prompt)
    delete_guard = DeleteGuard(window, window.controller)
    evaluation_sets = EvaluationSets(shell, run)
    variants = VariantsController(shell, run)
    run.use_document_source(variants.applied)  # what will run: one place, the active variant
    generation = EvalsetGeneration(shell, evaluation_sets, variants)
    tuning = Tuning(shell, evaluation_sets, variants)
    scorecards = Scorecards(shell, evaluation_sets, variants)
    studio_ux = StudioUX(shell)
    live_run = LiveRun(shell, run)
    node_flags = NodeFlags(shell, run)
    editor_extras = EditorExtras(shell, run, node_flags, studio_ux)
    index = IndexAction(shell, run)
    model_memory = ModelMemory(shell, window.controller)
    node_details = NodeDetails(shell, window.editor, run.inspector, window.canvas.on_node_opened,
                               window.canvas.selected_node_ids, window.canvas.variant)
    history = RunHistoryFeature(shell, run, variants, evaluation_sets)
    playground = PlaygroundDock(shell, run, history)
    subgraphs = SubgraphActions(shell, run)
    editor_extras.node_menu_items.append(subgraphs.menu_items)
    window.adders[PALETTE_PREFIX] = subgraphs.add_at
    trace_export = TraceExport(shell, window.controller)
    run_problems = RunProblems(shell, window.controller)
    new_from_folder = NewFromFolder(shell, studio_ux, index)
    answer_safety = AnswerSafety(shell)
    return StudioFeatures(run, evidence_debugger, preflight, cache_status, trust_prompt,
                          delete_guard, evaluation_sets, variants, generation, tuning,
                          scorecards, studio_ux, live_run, node_flags, editor_extras, index,
                          model_memory, node_details, history, playground, subgraphs,
                          trace_export, run_problems, new_from_folder, answer_safety)
