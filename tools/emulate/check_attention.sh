#!/bin/bash
# tools/emulate/check_attention.sh - step 11's split decode attention (carried into steps 12 and
# 13), run lane by lane on the CPU against attention in double, as one of `make test`'s checks.
exec "$(dirname "$0")/run.sh" attention check
