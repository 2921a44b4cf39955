#!/usr/bin/env bash
# The scaling sweep of issue 15: p = 1, 2, 4, 8, 16 ranks (oversubscribed on a small machine:
# bytes are exact, times are not), every replication factor c < 16 that divides p, bulk sizes
# k = 1, 4, 16, node-wise / LABOR / LADIES, push and pull, on R-MAT 20 and law-cnr-2000; then
# the model's validation and the figures.
#
#   bash experiments/run_scaling.sh [OUT_DIR]        (default runs/scaling; ~1 hour on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/scaling}
mkdir -p "$OUT"
CNR=../shared/datasets/law-cnr-2000/cnr-2000.npz
export OMP_NUM_THREADS=1 SPSAMPLE_THREADS=1
if [ -f "$CNR" ] && [ ! -f "$OUT/cnr2000.h5" ]; then
  python3 -m spsample convert "$CNR" "$OUT/cnr2000.h5"
fi
for p in 1 2 4 8 16; do
  cs=$(python3 -c "print(','.join(str(c) for c in range(1, $p + 1) if $p % c == 0 and (c < 16)))")
  mpiexec -n "$p" python3 experiments/scaling.py --scale 20 --data "$OUT/rmat20.h5" \
    --samplers nodewise,labor,ladies --k 1,4,16 --c "$cs" --out "$OUT/rmat20_p$p.json"
  if [ -f "$OUT/cnr2000.h5" ]; then
    mpiexec -n "$p" python3 experiments/scaling.py --data "$OUT/cnr2000.h5" \
      --samplers nodewise,labor,ladies --k 1,4,16 --c "$cs" --out "$OUT/cnr2000_p$p.json"
  fi
done
python3 experiments/model.py calibrate --out "$OUT/machine.json"
python3 experiments/model.py validate "$OUT"/rmat20_p*.json "$OUT"/cnr2000_p*.json \
  --machine "$OUT/machine.json" --out "$OUT/validation.json" | tee "$OUT/validation.txt"
python3 experiments/plot.py "$OUT"/rmat20_p*.json --out "$OUT/figures/rmat20"
[ -f "$OUT/cnr2000_p1.json" ] && python3 experiments/plot.py "$OUT"/cnr2000_p*.json \
  --out "$OUT/figures/cnr2000"
python3 experiments/model.py project --machine spsample/data/machines/perlmutter.json \
  --out "$OUT/projection.json" --plot "$OUT/figures" | tee "$OUT/projection.txt"
