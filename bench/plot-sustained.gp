# plot-sustained.gp -- the sustained workload's rows inserted in each
# second of each engine's load (tsstore with the library's defaults,
# LMDB, RocksDB), from tsstore-bench's JSON lines, as a PNG: the
# throughput over time, where a stall shows as a dip.
#
#   build/bin/tsstore-bench --workload sustained > sustained.jsonl
#   gnuplot -e "in='sustained.jsonl'; out='sustained.png'" bench/plot-sustained.gp
#
# Needs grep and sed (the results are JSON lines).
if (!exists("in")) in = "sustained.jsonl"
if (!exists("out")) out = "sustained.png"

# "second rows" pairs of one engine's timeline
series(engine) = sprintf("< grep -F '\"engine\":\"%s\",\"metric\":\"rows_in_second\"' '%s' | sed -E 's/.*\"value\":([^,]*),.*\"second\":([0-9]+).*/\\2 \\1/'", engine, in)
# one summary value of an engine
summary(engine, metric) = system(sprintf("grep -F '\"engine\":\"%s\",\"metric\":\"%s\"' '%s' | sed -E 's/.*\"value\":([^,]*),.*/\\1/' | tail -1", engine, metric, in))
param(engine, name) = system(sprintf("grep -F '\"engine\":\"%s\",\"metric\":\"rows_per_sec\"' '%s' | sed -E 's/.*\"%s\":([0-9]+).*/\\1/' | tail -1", engine, in, name))

rows = param("tsstore", "rows")
flushes = param("tsstore", "flushes")
merges = param("tsstore", "merges")

set terminal pngcairo size 1100,500 font "sans,10" noenhanced
set output out
set title sprintf("sustained library ingest: %s rows, 1000 hosts, batches of 512 (tsstore: %s flushes, %s merges during the load)", rows, flushes, merges)
set xlabel "second of the engine's load (time in its insert calls)"
set ylabel "rows inserted in that second"
set key top right
set grid
set yrange [0:*]
plot series("tsstore") using 1:2 with lines lw 1.5 lc rgb "#d62728" title "tsstore (library defaults)", \
     series("lmdb") using 1:2 with lines lw 1.5 lc rgb "#1f77b4" title "LMDB", \
     series("rocksdb") using 1:2 with lines lw 1.5 lc rgb "#2ca02c" title "RocksDB"
