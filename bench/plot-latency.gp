# plot-latency.gp -- the latency workload's per-second p99 insert latency,
# merges off against merges on, from tsstore-bench's JSON lines, as a PNG.
#
#   build/bin/tsstore-bench --workload latency > latency.jsonl
#   gnuplot -e "in='latency.jsonl'; out='bench/latency-p99.png'" bench/plot-latency.gp
#
# The dashed line is Done-when (3)'s bound: twice the p99 of the whole
# merges-off run.  Needs grep and sed (the results are JSON lines).
if (!exists("in")) in = "latency.jsonl"
if (!exists("out")) out = "latency-p99.png"

# "second value" pairs of one engine's per-second metric, in microseconds
series(engine, metric) = sprintf("< grep -F '\"engine\":\"%s\",\"metric\":\"%s\"' '%s' | sed -E 's/.*\"value\":([^,]*),.*\"second\":([0-9]+).*/\\2 \\1/'", engine, metric, in)
# one summary value of an engine
summary(engine, metric) = system(sprintf("grep -F '\"engine\":\"%s\",\"metric\":\"%s\"' '%s' | sed -E 's/.*\"value\":([^,]*),.*/\\1/' | tail -1", engine, metric, in))

p99_off = summary("tsstore_merge_off", "p99_all_ns") / 1000.0
merges = summary("tsstore_merge_on", "merges")
flushes = summary("tsstore_merge_on", "flushes")

set terminal pngcairo size 1100,500 font "sans,10" noenhanced
set output out
set title sprintf("tsstore insert latency, per-second p99 (batches of 512 rows; merges-on run: %s flushes, %s merges)", flushes, merges)
set xlabel "second of the run"
set ylabel "p99 of ts_insert, microseconds (log scale)"
set key top left
set grid
set logscale y
set yrange [100:*]
plot series("tsstore_merge_off", "p99_ns") using 1:($2/1000) with lines lw 1.5 lc rgb "#1f77b4" title "merges off", \
     series("tsstore_merge_on", "p99_ns") using 1:($2/1000) with lines lw 1.5 lc rgb "#d62728" title "merges on", \
     2 * p99_off with lines dt 2 lc rgb "black" title sprintf("2 x p99 of the merges-off run (%.0f us)", 2 * p99_off)
