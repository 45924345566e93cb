"""Maps the ``nodes/`` folder to the import name ``modrag_nodes`` (no clash with ``nodes``)."""

from setuptools import find_packages, setup

node_packages = ["modrag_nodes"] + [f"modrag_nodes.{p}" for p in find_packages("nodes")]
setup(
    packages=find_packages(include=["modrag_studio", "modrag_studio.*"]) + node_packages,
    package_dir={"modrag_nodes": "nodes"},
)
