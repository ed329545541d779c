"""``python -m memoryd_client.cli``: memctl without its console script."""

import sys

from memoryd_client.cli._main import main

sys.exit(main())
