#!/bin/bash
# tools/emulate/check.sh - step 15's chunk kernels, run lane by lane on the CPU against the
# recurrence, as one of `make test`'s checks: the GPU kernels' code checked where there is no GPU.
exec "$(dirname "$0")/run.sh" check
