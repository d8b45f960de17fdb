#!/bin/bash
# gpu_throttling beside a busy simulated engine whose GPU (GPU 0) runs dense
# bf16 matrix products at its power limit, for two builds side by side:
# $OLD (port 9835) and $NEW (port 9836). Needs python3 with torch. Writes
# the daemons' verdicts and GPU series every 5 s to $OUT/scrapes.txt.
set -u
D=$(dirname "$0"); O=${OUT:-/tmp/gpu-ab}; mkdir -p "$O"
"$NEW" simulate --web.listen-address 127.0.0.1:8000 > "$O/sim.log" 2>&1 &
sleep 2
"$OLD" --config.file="$D/daemon.yml" --gpu.backend=nvml --web.listen-address=127.0.0.1:9835 > "$O/old.log" 2>&1 &
"$NEW" --config.file="$D/daemon.yml" --gpu.backend=nvml --web.listen-address=127.0.0.1:9836 > "$O/new.log" 2>&1 &
sleep 20
(sleep 5; echo "$(date +%s.%N) gemm start"; python3 "$D/gemm.py" 180; echo "$(date +%s.%N) gemm end") > "$O/gemm.log" 2>&1 &
for i in $(seq 1 48); do
  for p in 9835 9836; do
    echo "# $(date +%s.%N) $p"
    curl -s "127.0.0.1:$p/metrics" | grep -E '^(llm_failure_mode\{|llm_gpu_power_watts|llm_gpu_sm_clock_hertz|llm_gpu_throttled|llm_requests_running|goodput_exporter_gpu_collection_errors_total|llm_up)'
  done >> "$O/scrapes.txt"
  sleep 5
done
kill $(jobs -p) 2>/dev/null
