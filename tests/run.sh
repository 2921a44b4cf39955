#!/usr/bin/env bash
# spsample's test command: the serial suite, then the MPI suites under mpiexec -n 2 and -n 4.
# Every suite runs even if an earlier one failed; the exit status is non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
status=0

echo "== serial suite"
$PY -m pytest -p no:cacheprovider --timeout=900 tests || status=1

echo "== doctests of spsample's modules"
$PY -m pytest -p no:cacheprovider --timeout=900 --doctest-modules spsample || status=1

mpi_dirs=()
for d in tests/distributed tests/mpi tests/conformance/test_world.py; do
  [ -e "$d" ] && mpi_dirs+=("$d")
done
if [ ${#mpi_dirs[@]} -gt 0 ]; then
  for n in 2 4; do
    echo "== mpiexec -n $n ${mpi_dirs[*]}"
    # one thread per rank; oversubscription is MPICH's default. timeout turns a deadlock into a failure.
    OMP_NUM_THREADS=1 SPSAMPLE_THREADS=1 timeout 900 mpiexec -n "$n" \
      $PY -m pytest -p no:cacheprovider --capture=sys --timeout=300 -q "${mpi_dirs[@]}" || status=1
  done
fi
exit $status
