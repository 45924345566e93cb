"""``modrag validate``, ``modrag check``, ``modrag schema`` and ``modrag nodes``."""

from __future__ import annotations

import argparse
import json
import sys

from modrag_studio.commands.common import load_or_exit, load_with_overrides
from modrag_studio.commands.exit_codes import EXIT_INVALID, EXIT_OK, EXIT_RUN_FAILED


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    validate = subparsers.add_parser("validate", help="check a graph file and list its problems")
    validate.add_argument("graph", help="graph JSON file")
    validate.add_argument("--json", action="store_true", help="print problems as JSON")
    validate.set_defaults(func=run_validate)

    check = subparsers.add_parser(
        "check", help="pre-flight: validate a graph and check its models, stores and servers",
        description="Validates the graph, then asks every node that uses something outside it "
        "(embedding and chat models, rerankers, vector stores, Ollama and Chroma servers) "
        "whether it is available here, without downloading or running anything. Exit 0 when "
        "all is ready, 1 when a component is not, 2 when the graph is invalid.")
    check.add_argument("graph", help="graph JSON file")
    check.add_argument("--set", action="append", default=[], metavar="NODE.PARAM=VALUE",
                       help="override a node param (repeatable)")
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.set_defaults(func=run_check)

    schema = subparsers.add_parser("schema", help="print the JSON Schema of graph files")
    schema.set_defaults(func=run_schema)

    nodes = subparsers.add_parser("nodes", help="list node types with their ports and params")
    nodes.add_argument("--json", action="store_true", help="print as JSON")
    nodes.add_argument("--category", help="only this category")
    nodes.set_defaults(func=run_nodes)


def run_validate(args: argparse.Namespace) -> int:
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.compose.check import validate_graph as validate
    from modrag_studio.engine.core.graph_io import graph_interface
    from modrag_studio.engine.core.validation import errors_only

    doc = load_or_exit(args.graph)
    if doc is None:
        return EXIT_INVALID
    from modrag_studio.engine.evidence.safety import unchecked_answers

    registry = default_registry()
    problems = validate(doc, registry)
    unsafe = unchecked_answers(doc, registry)  # warnings: the graph runs, its answers unchecked
    if args.json:
        print(json.dumps([p.to_dict() for p in [*problems, *unsafe]], indent=2))
    elif problems:
        for problem in problems:
            print(visible(problem))
    else:
        print(visible(f"{args.graph}: valid ({len(doc.nodes)} nodes, {len(doc.edges)} edges)"))
        interface = graph_interface(doc, registry)
        inputs = ", ".join(p.name + ("" if p.required else f" (default: {p.default})")
                           for p in interface.inputs)
        print(visible(f"inputs: {inputs or 'none'}; outputs: "
                      f"{', '.join(interface.output_names) or 'none'}"))
    if not args.json:
        for problem in unsafe:
            print(visible(problem))
        print_reach(doc, args.graph)
    return EXIT_INVALID if errors_only(problems) else EXIT_OK


def visible(text: object) -> str:
    """``text`` with what a graph file holds shown escaped, line by line (``shown``): a name,
    a param or a message cannot rewrite what the terminal shows."""
    from modrag_studio.engine.core.formatting import shown

    return "\n".join(shown(line) for line in str(text).split("\n"))


def print_reach(doc, graph_path: str, file=None) -> None:
    """The files the graph reads outside its folder and the hosts it contacts (not run)."""
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.trust.reach import reach

    found = reach(doc, default_registry(), graph_path)
    if found.empty:
        print("reaches: nothing outside its folder; no host but this machine; "
              "no environment variable", file=file)
        return
    print("reaches outside its folder (check before running a graph from elsewhere):",
          file=file)
    for line in found.lines():
        print(f"  {line}", file=file)


def run_check(args: argparse.Namespace) -> int:
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.run.health import check_health

    doc = load_with_overrides(args.graph, args.set)
    if doc is None:
        return EXIT_INVALID
    report = check_health(doc, default_registry())
    if args.json:
        print(json.dumps(report.model_dump(), indent=2))
    else:
        rows = [("graph", report.graph), *report.nodes.items()]
        width = max(len(name) for name, _ in rows)
        for name, health in rows:
            print(visible(f"{'ok  ' if health.ok else 'FAIL'}  {name:<{width}}  "
                          f"{health.detail}"))
        print_reach(doc, args.graph)
        print("ready" if report.ok else "not ready", file=sys.stderr)
    if not report.graph.ok:
        return EXIT_INVALID
    return EXIT_OK if report.ok else EXIT_RUN_FAILED


def run_schema(args: argparse.Namespace) -> int:
    from modrag_studio.engine.core.document import json_schema

    print(json.dumps(json_schema(), indent=2, sort_keys=True))
    return EXIT_OK


def run_nodes(args: argparse.Namespace) -> int:
    from modrag_studio.composition import default_registry

    types = [t for t in default_registry() if not args.category or t.category == args.category]
    if args.json:
        print(json.dumps([t.describe() for t in types], indent=2))
        return EXIT_OK
    out = sys.stdout
    for node_type in types:
        info = node_type.describe()
        out.write(f"{info['type']} (v{info['version']}, {info['category']}): "
                  f"{info['description']}\n")
        for port in info["inputs"]:
            flags = "" if port["required"] else ", optional"
            flags += ", multiple" if port["multiple"] else ""
            out.write(f"    in  {port['name']}: {port['type']}{flags}\n")
        for port in info["outputs"]:
            out.write(f"    out {port['name']}: {port['type']}\n")
        for name, prop in info["params"].get("properties", {}).items():
            default = f" = {prop['default']!r}" if "default" in prop else ""
            out.write(f"    param {name}{default}\n")
    return EXIT_OK
