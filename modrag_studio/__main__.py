"""``python -m modrag_studio [GRAPH.json]`` starts the studio (the CLI is ``modrag``)."""

import sys

from modrag_studio.ui.shell.app import main

sys.exit(main())
