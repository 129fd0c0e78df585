# The soak's hub: accepts every peer, says something to everyone every half second until
# the soak ends (SOAK_SECONDS after the first start, 60 by default; see peer.sh), and every
# 2 s prints its own resident memory, threads and open descriptors as a soak-sample line.
mkdir -p "$NEARBY_STATE_DIR"; end_file="$NEARBY_STATE_DIR/soak-end"; [ -s "$end_file" ] || echo $(( $(date +%s) + ${SOAK_SECONDS:-60} + 5 )) > "$end_file"; end=$(cat "$end_file")
{ n=0; while [ "$(date +%s)" -lt "$end" ]; do n=$((n + 1)); echo "hub $n"; sleep 0.5; done; echo /quit; } | nearby chat --json --accept all &
pid=$!
while kill -0 "$pid" 2>/dev/null; do if [ -r "/proc/$pid/status" ]; then echo "soak-sample $(date +%s) rss_kb=$(awk '/^VmRSS/ {print $2}' /proc/$pid/status) threads=$(awk '/^Threads/ {print $2}' /proc/$pid/status) fds=$(ls /proc/$pid/fd | wc -l)"; fi; sleep 2; done
wait "$pid"
