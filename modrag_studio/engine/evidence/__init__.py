"""Expected evidence and where a finished run lost it: lineage, attribution, counterfactuals."""
