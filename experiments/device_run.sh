#!/usr/bin/env bash
# One prepared run on a machine with an NVIDIA GPU and 16 cores (issue 29). It builds the
# native extension there (no network), then writes everything under $OUT:
#   (1) the gpu-marked tests (CUDA == CPU bit for bit): gpu_tests.xml (JUnit);
#   (2) experiments/gpu/run.py on R-MAT 22 (node-wise, LABOR, LADIES, FastGCN: edges/s, CPU ==
#       GPU identity, the ratio to this GPU's measured random-access bound, and to cuGraph when
#       it imports): gpu_run.json, gpu_run.png;
#   (3) the CPU scaling sweep: mpiexec -n 16, 8, 4, 2, 1 experiments/scaling.py, node-wise and
#       LABOR push on R-MAT 20 (bytes and times per phase), then experiments/model.py calibrate
#       and validate on those times: results.tar.gz, validation.txt;
#   (4) summary.json: each part's status, seconds, key numbers and error
#       (experiments/device_summary.py); device_run.log: everything printed.
# Each part runs under its own `timeout`, cut to what is left before the deadline, so one part
# that hangs cannot eat the others. A part that cannot run (no CuPy or no GPU, no MPI runtime)
# is recorded as skipped with the reason, and the rest still runs. How to run it with the
# device tool and how to read the summary: experiments/README.md, "On a GPU machine".
#
#   OUT=/some/dir bash experiments/device_run.sh             # the real run, about 6 minutes
#   OUT=/some/dir bash experiments/device_run.sh --dry-run   # tiny sizes, ~10 CPU seconds
#
# Options: --dry-run (R-MAT 10 / 12, p = 4, 2, 1, one repeat: what CI runs, so the script cannot
# rot); --deadline SECONDS (default 450, or DEVICE_RUN_DEADLINE: every part's timeout is cut
# to end before it); --only PARTS (comma-separated among gpu_tests, gpu_bench, cpu_sweep --
# calibrate and validate go with cpu_sweep -- for a second call after a fix; setup and build
# always run, and the graphs are reused on a machine still warm from the first call).
# Environment: OUT (required); WHEELS (default .whl): an mpich wheel there is installed as the
# MPI runtime, an mpi4py wheel is used if the machine's own mpi4py cannot load MPI; MPIEXEC
# (default mpiexec); DEVICE_RUN_KEEP=1 keeps the scratch folder (printed at the start).
# Exit status: 0 when no part failed or timed out (skipped parts are fine), 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD

DRY=0
ONLY=gpu_tests,gpu_bench,cpu_sweep
DEADLINE=${DEVICE_RUN_DEADLINE:-450}
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) DRY=1 ;;
    --deadline) DEADLINE=${2:?--deadline needs seconds}; shift ;;
    --only) ONLY=${2:?--only needs parts}; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
               exit 0 ;;
    *) echo "device_run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
: "${OUT:?device_run.sh: set OUT to the folder to write into}"
if ! [[ $DEADLINE =~ ^[0-9]+$ ]]; then
  echo "device_run.sh: --deadline must be whole seconds, got '$DEADLINE'" >&2; exit 2
fi
WHEELS=${WHEELS:-.whl}
MPIEXEC=${MPIEXEC:-mpiexec}

if [ "$DRY" = 1 ]; then
  MODE=dry-run; SWEEP_SCALE=10; GPU_SCALE=12; RANKS="4 2 1"; KS=1; BATCH=32; FIT_BELOW=4
  CAL_ARGS=(--scale 10 --ranks 2 --batch-size 32)
  GPU_ARGS=(--scales 12 --repeat 1 --batches 4 --batch-size 64 --layer-fanouts "64,64,64"
            --probe-mb 64)
else
  MODE=device; SWEEP_SCALE=20; GPU_SCALE=22; RANKS="16 8 4 2 1"; KS=1,16; BATCH=256
  FIT_BELOW=8                          # also fit the overheads on p = 2, 4 and test p = 8, 16
  CAL_ARGS=(--scale 18 --ranks "2,4,8,16")
  GPU_ARGS=(--scales 22 --repeat 3)
fi

T0=$SECONDS
SUMMARY=$OUT/summary.json
WORK=$(mktemp -d "${TMPDIR:-/tmp}/spsample_device_run.XXXXXX") || exit 1
# The generated graphs: in the checkout's ignored runs/ on the device (a second call on the
# same warm machine reuses them), in the scratch folder for a dry run.
if [ "$DRY" = 1 ]; then GRAPHS=$WORK/graphs; else GRAPHS=$ROOT/runs/device_graphs; fi
declare -A GEN_PID=()
GPU_OK=0 GPU_WHY="" MPI_OK=0 MPI_WHY=""

# The parts after the build, in order, and the seconds each needs at least to be worth
# starting: the time budget of a part leaves these to the parts after it that will run.
ORDER=(build gpu_tests gpu_bench cpu_sweep calibrate validate)
declare -A MIN_S=([build]=0 [gpu_tests]=40 [gpu_bench]=60 [cpu_sweep]=80 [calibrate]=25
                  [validate]=10)

elapsed() { echo $((SECONDS - T0)); }
join() { local IFS=,; echo "$*"; }
banner() { echo; echo "== [$(elapsed) s] $*"; }

record() {
  python3 experiments/device_summary.py part "$SUMMARY" "$@" ||
    echo "device_run.sh: could not record part $1 in $SUMMARY" >&2
}

status_of() {
  case $1 in 0) echo ok ;; 124|137) echo timeout ;; *) echo failed ;; esac
}

asked() {           # part: named by --only (calibrate and validate go with cpu_sweep)
  case $1 in calibrate|validate) set -- cpu_sweep ;; esac
  [[ ",$ONLY," == *",$1,"* ]]
}

will_run() {        # part: asked for, and what it needs is here
  asked "$1" || return 1
  case $1 in
    gpu_tests|gpu_bench) [ "$GPU_OK" = 1 ] ;;
    cpu_sweep|calibrate|validate) [ "$MPI_OK" = 1 ] ;;
  esac
}

# budget PART MAX: the seconds PART may take: MAX, cut so that the parts after it that will
# run keep their minimum before the deadline.
budget() {
  local part seen=0 reserve=0 left
  for part in "${ORDER[@]}"; do
    if [ "$seen" = 1 ] && will_run "$part"; then reserve=$((reserve + MIN_S[$part])); fi
    [ "$part" = "$1" ] && seen=1
  done
  left=$((DEADLINE - (SECONDS - T0) - reserve))
  echo $((left < $2 ? left : $2))
}

not_asked() {       # part: true, with the part recorded as skipped, when --only leaves it out
  asked "$1" && return 1
  echo "skipped: not asked for (--only $ONLY)"
  record "$1" --status skipped --reason "skipped: not asked for (--only $ONLY)"
}

no_time() {         # part seconds: true, with the part recorded as timed out, when too few
  [ "$2" -lt 5 ] || return 1
  echo "not run: out of time before the ${DEADLINE} s deadline"
  record "$1" --status timeout --reason "not run: out of time before the ${DEADLINE} s deadline"
}

# ---------------------------------------------------------------------------- setup: MPI
mpi_smoke() {
  if ! command -v "$MPIEXEC" >/dev/null 2>&1; then
    echo "no '$MPIEXEC' on PATH" >"$WORK/mpi_smoke.log"
    return 1
  fi
  timeout -k 5 30 "$MPIEXEC" -n 2 python3 -c \
    "from mpi4py import MPI; assert MPI.COMM_WORLD.Get_size() == 2" >"$WORK/mpi_smoke.log" 2>&1
}

install_mpich() {
  compgen -G "$WHEELS/mpich-*.whl" >/dev/null || return 1
  python3 -m pip install -q --no-index --no-deps --no-compile --prefix "$WORK/mpich" \
    "$WHEELS"/mpich-*.whl || return 1
  export PATH="$WORK/mpich/bin:$PATH"
  export LD_LIBRARY_PATH="$WORK/mpich/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

install_mpi4py() {
  compgen -G "$WHEELS/mpi4py-*.whl" >/dev/null || return 1
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$WORK/site" \
    "$WHEELS"/mpi4py-*.whl || return 1
  export PYTHONPATH="$WORK/site:$PYTHONPATH"
}

part_setup() {
  local t0=$SECONDS notes=() lib
  banner "setup: the MPI runtime"
  if [[ $MPIEXEC == */* ]]; then PATH="$(dirname "$MPIEXEC"):$PATH"; export PATH; fi
  if install_mpich; then notes+=("mpich wheel from $WHEELS installed in the scratch folder"); fi
  if mpi_smoke; then
    MPI_OK=1
  elif grep -qiE "mpi4py|libmpi|MPI library" "$WORK/mpi_smoke.log" && install_mpi4py &&
       mpi_smoke; then
    MPI_OK=1; notes+=("mpi4py wheel from $WHEELS used")
  elif command -v "$MPIEXEC" >/dev/null 2>&1 && HYDRA_LAUNCHER=fork mpi_smoke; then
    MPI_OK=1; export HYDRA_LAUNCHER=fork; notes+=("HYDRA_LAUNCHER=fork")
  fi
  if [ "$MPI_OK" = 1 ]; then
    lib=$(python3 -c "from mpi4py import MPI; print(MPI.Get_library_version().splitlines()[0])" \
      2>&1 | tail -n 1)
  else
    MPI_WHY=$(tail -n 1 "$WORK/mpi_smoke.log")
    lib="unavailable: $MPI_WHY"
  fi
  echo "MPI: $lib"
  record setup --status ok --seconds $((SECONDS - t0)) --set "mpi_ok=$MPI_OK" --set "mpi=$lib" \
    --set "notes=${notes[*]:-}" --set "only=$ONLY"
}

detect_gpu() {
  GPU_WHY=$(python3 - 2>&1 <<'EOF' | tail -n 1
from spsample.gpu import _device as _gpu
from spsample._errors import MissingDependencyError
try:
    _gpu._import_cupy()
    print("ok")
except MissingDependencyError as exc:
    print(exc)
EOF
)
  if [ "$GPU_WHY" = ok ]; then GPU_OK=1; fi
  echo "GPU: $GPU_WHY"
}

# ------------------------------------------------------------------- graphs (background)
start_graph() {     # scale: generate R-MAT <scale> in the background (kept when it exists)
  mkdir -p "$GRAPHS"
  timeout -k 5 "$(budget gpu_tests 300)" python3 experiments/rmat_h5.py --scale "$1" \
    --out "$GRAPHS/rmat$1.h5" >"$WORK/rmat$1.log" 2>&1 &
  GEN_PID[$1]=$!
}

wait_graph() {      # scale: wait for its generator; true when the file is there
  local rc=0
  if [ -n "${GEN_PID[$1]:-}" ]; then
    wait "${GEN_PID[$1]}" || rc=$?
    unset "GEN_PID[$1]"
    cat "$WORK/rmat$1.log"
    [ "$rc" = 0 ] || echo "generating R-MAT $1 failed ($rc): the part generates it itself"
  fi
  [ -f "$GRAPHS/rmat$1.h5" ]
}

stop_generators() {
  local pid
  for pid in "${GEN_PID[@]}"; do kill "$pid" 2>/dev/null; done
}

cleanup() {
  if [ "${DEVICE_RUN_KEEP:-0}" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}

# --------------------------------------------------------------------------------- build
native_state() {
  python3 -c "from spsample import native as n; print(n.AVAILABLE, n.IMPORT_ERROR or '')" \
    2>&1 | tail -n 1
}

part_build() {
  local t0=$SECONDS rc=0 note="" state t
  banner "build: python3 setup.py build_ext --inplace"
  if [ "$DRY" = 1 ] && [[ $(native_state) == True* ]]; then
    note="dry run: the extension is already built here, not rebuilt"
    echo "$note"
  else
    t=$(budget build 240)
    [ "$t" -ge 30 ] || t=30
    timeout -k 10 "$t" python3 setup.py build_ext --inplace >"$WORK/build.log" 2>&1
    rc=$?
    tail -n 25 "$WORK/build.log"
  fi
  state=$(native_state)
  echo "native kernels: $state"
  if [ "$rc" != 0 ]; then
    record build --status "$(status_of $rc)" --seconds $((SECONDS - t0)) \
      --reason "setup.py build_ext exited $rc" --set "native=$state"
  elif [[ $state != True* ]]; then
    record build --status failed --seconds $((SECONDS - t0)) \
      --reason "the extension does not import: ${state#False }" --set "native=$state"
  else
    record build --status ok --seconds $((SECONDS - t0)) --set "native=$state" \
      --set "note=$note"
  fi
}

# ----------------------------------------------------------------------------- GPU parts
no_device() {       # part: recorded as skipped when there is no GPU
  [ "$GPU_OK" = 1 ] && return 1
  echo "skipped: no device ($GPU_WHY)"
  record "$1" --status skipped --reason "skipped: no device ($GPU_WHY)"
}

part_gpu_tests() {
  local t0=$SECONDS t rc files=() flag=()
  banner "gpu tests: pytest -m gpu"
  not_asked gpu_tests && return
  no_device gpu_tests && return
  t=$(budget gpu_tests 150)
  no_time gpu_tests "$t" && return
  mapfile -t files < <(grep -l "mark\.gpu" tests/test_*.py tests/*/test_*.py 2>/dev/null)
  python3 -c "import pytest_timeout" 2>/dev/null && flag=(--timeout=120)
  timeout -k 10 "$t" python3 -m pytest -q -p no:cacheprovider -rs -m gpu "${flag[@]}" \
    --junitxml="$OUT/gpu_tests.xml" "${files[@]}"
  rc=$?
  record gpu_tests --status "$(status_of $rc)" --seconds $((SECONDS - t0)) \
    --junit "$OUT/gpu_tests.xml" --set "files=$(join "${files[@]}")" --set "pytest_exit=$rc"
}

part_gpu_bench() {
  local t0=$SECONDS t rc cugraph
  banner "gpu benchmark: experiments/gpu/run.py ${GPU_ARGS[*]}"
  not_asked gpu_bench && return
  no_device gpu_bench && return
  wait_graph "$GPU_SCALE"
  t=$(budget gpu_bench 200)
  no_time gpu_bench "$t" && return
  cugraph=$(python3 -c "import pylibcugraph as p; print('pylibcugraph', p.__version__)" 2>&1 |
    tail -n 1)
  echo "cuGraph: $cugraph"
  timeout -k 10 "$t" python3 experiments/gpu/run.py --skip-tests --graph-dir "$GRAPHS" \
    --out "$OUT/gpu_run.json" "${GPU_ARGS[@]}" 2>&1 | tee "$WORK/gpu_run.log"
  rc=$?
  record gpu_bench --status "$(status_of $rc)" --seconds $((SECONDS - t0)) \
    --gpu-run "$OUT/gpu_run.json" --bench-log "$WORK/gpu_run.log" --set "run_py_exit=$rc" \
    --set "cugraph_import=$cugraph"
}

# ----------------------------------------------------------------------------- CPU parts
no_mpi() {          # part: recorded as skipped when there is no MPI runtime
  [ "$MPI_OK" = 1 ] && return 1
  echo "skipped: no MPI runtime ($MPI_WHY)"
  record "$1" --status skipped --reason "skipped: no MPI runtime ($MPI_WHY)"
}

sweep_files() { compgen -G "$WORK/scaling/rmat${SWEEP_SCALE}_p*.json"; }

part_sweep() {
  local t0=$SECONDS p t cs rc failed=() timed_out=() not_run=() status=ok
  banner "CPU scaling sweep: p = $RANKS, node-wise and LABOR push, R-MAT $SWEEP_SCALE"
  not_asked cpu_sweep && return
  no_mpi cpu_sweep && return
  no_time cpu_sweep "$(budget cpu_sweep 75)" && return
  wait_graph "$SWEEP_SCALE"
  for p in $RANKS; do
    t=$(budget cpu_sweep 90)
    if [ "$t" -lt 15 ]; then not_run+=("$p"); continue; fi
    cs=1; [ "$p" -ge 4 ] && cs=1,2
    echo "-- mpiexec -n $p (c = $cs, k = $KS; timeout $t s)"
    OMP_NUM_THREADS=1 SPSAMPLE_THREADS=1 timeout -k 10 "$t" "$MPIEXEC" -n "$p" \
      python3 experiments/scaling.py --scale "$SWEEP_SCALE" --data "$GRAPHS/rmat$SWEEP_SCALE.h5" \
      --samplers nodewise,labor --strategies push --k "$KS" --c "$cs" --batch-size "$BATCH" \
      --out "$WORK/scaling/rmat${SWEEP_SCALE}_p$p.json" 2>&1
    rc=$?
    case $(status_of $rc) in failed) failed+=("$p") ;; timeout) timed_out+=("$p") ;; esac
  done
  if [ ${#failed[@]} -gt 0 ]; then status=failed
  elif [ ${#timed_out[@]} -gt 0 ] || [ ${#not_run[@]} -gt 0 ]; then status=timeout; fi
  record cpu_sweep --status "$status" --seconds $((SECONDS - t0)) --sweep-dir "$WORK/scaling" \
    --set "ranks_failed=[$(join "${failed[@]}")]" \
    --set "ranks_timed_out=[$(join "${timed_out[@]}")]" \
    --set "ranks_not_run_out_of_time=[$(join "${not_run[@]}")]" --set "graph=rmat$SWEEP_SCALE" \
    --set "c=1, and 2 where p >= 4" --set "k=$KS" --set "batch_size=$BATCH"
}

part_calibrate() {
  local t0=$SECONDS t rc
  banner "model calibrate: ${CAL_ARGS[*]}"
  not_asked calibrate && return
  no_mpi calibrate && return
  t=$(budget calibrate 90)
  no_time calibrate "$t" && return
  if ! sweep_files >/dev/null; then
    record calibrate --status skipped --reason "skipped: the sweep wrote no results"; return
  fi
  OMP_NUM_THREADS=1 timeout -k 10 "$t" python3 experiments/model.py calibrate \
    --out "$WORK/scaling/machine.json" "${CAL_ARGS[@]}" 2>&1
  rc=$?
  record calibrate --status "$(status_of $rc)" --seconds $((SECONDS - t0)) \
    --machine "$WORK/scaling/machine.json"
}

part_validate() {
  local t0=$SECONDS t rc fit_rc runs=() fit=()
  banner "model validate on the sweep's times"
  not_asked validate && return
  no_mpi validate && return
  t=$(budget validate 60)
  no_time validate "$t" && return
  if [ ! -f "$WORK/scaling/machine.json" ]; then
    record validate --status skipped --reason "skipped: no calibrated machine file"; return
  fi
  mapfile -t runs < <(sweep_files)
  timeout -k 5 "$t" python3 experiments/model.py validate "${runs[@]}" \
    --machine "$WORK/scaling/machine.json" --out "$WORK/scaling/validation.json" 2>&1 |
    tee "$OUT/validation.txt"
  rc=$?
  if [ -n "$FIT_BELOW" ] && [ "$(budget validate 40)" -ge 5 ]; then
    echo "-- with the overheads fitted to the runs with p < $FIT_BELOW" |
      tee -a "$OUT/validation.txt"
    timeout -k 5 "$(budget validate 40)" python3 experiments/model.py validate "${runs[@]}" \
      --machine "$WORK/scaling/machine.json" --fit-below "$FIT_BELOW" \
      --fitted-out "$WORK/scaling/machine_fitted.json" \
      --out "$WORK/scaling/validation_fit.json" 2>&1 | tee -a "$OUT/validation.txt"
    fit_rc=$?
    fit=(--validation-fit "$WORK/scaling/validation_fit.json" --fit-below "$FIT_BELOW"
         --set "fit_exit=$fit_rc")
  fi
  record validate --status "$(status_of $rc)" --seconds $((SECONDS - t0)) \
    --validation "$WORK/scaling/validation.json" "${fit[@]}"
}

# ------------------------------------------------------------------------------- finish
finalize() {
  banner "summary"
  cp "$WORK"/*.log "$WORK/scaling/" 2>/dev/null
  [ -n "$(ls -A "$WORK/scaling")" ] && tar -czf "$OUT/results.tar.gz" -C "$WORK" scaling
  python3 experiments/device_summary.py finish "$SUMMARY" --elapsed "$(elapsed)"
}

main() {
  local gpu_line
  trap stop_generators EXIT
  mkdir -p "$WORK/scaling" || return 1
  export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
  export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
  gpu_line=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader \
    2>/dev/null | head -n 1)
  echo "device_run.sh ($MODE): deadline $DEADLINE s, parts $ONLY, OUT=$OUT, scratch $WORK," \
    "$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), GPU: ${gpu_line:-none}"
  python3 experiments/device_summary.py init "$SUMMARY" --mode "$MODE" --deadline "$DEADLINE" \
    --gpu "$gpu_line" || return 1
  part_setup
  detect_gpu
  # the graphs are generated while the extension builds (NumPy; one core each)
  will_run cpu_sweep && start_graph "$SWEEP_SCALE"
  will_run gpu_bench && start_graph "$GPU_SCALE"
  part_build
  part_gpu_tests
  part_gpu_bench
  part_sweep
  part_calibrate
  part_validate
  finalize
}

mkdir -p "$OUT" || exit 1
trap cleanup EXIT
main 2>&1 | tee "$OUT/device_run.log"
