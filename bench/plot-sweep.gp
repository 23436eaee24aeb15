# plot-sweep.gp -- the absorb_sweep workload as two PNGs, from
# tsstore-bench's JSON lines: rows/s against batch size (absorb_batch) and
# MB/s against row size (absorb_rowsize), one line per engine, both axes
# logarithmic.  bench/plot-sweep.sh passes the engines that ran:
#
#   build/bin/tsstore-bench --workload absorb_sweep > sweep.jsonl
#   gnuplot -e "in='sweep.jsonl'; out_batch='absorb-batch.png'; \
#               out_rowsize='absorb-rowsize.png'; engines_batch='tsstore hash lmdb'; \
#               engines_rowsize='tsstore hash lmdb'" bench/plot-sweep.gp
#
# Needs grep and sed (the results are JSON lines).
if (!exists("in")) in = "sweep.jsonl"
if (!exists("out_batch")) out_batch = "absorb-batch.png"
if (!exists("out_rowsize")) out_rowsize = "absorb-rowsize.png"
if (!exists("engines_batch")) engines_batch = "tsstore hash lmdb"
if (!exists("engines_rowsize")) engines_rowsize = "tsstore hash lmdb"

# "x value" pairs of one engine's metric in a sweep, x the first member
# of params (batch, row_size)
series(workload, engine, metric) = sprintf("< grep -F '{\"workload\":\"%s\",\"engine\":\"%s\",\"metric\":\"%s\",' '%s' | sed -E 's/.*\"value\":([^,]*),.*\"params\":\\{\"[a-z_]+\":([0-9]+).*/\\2 \\1/'", workload, engine, metric, in)
# "x:rows" of every point of a sweep, from tsstore's lines
rows_of(workload, x) = system(sprintf("grep -F '{\"workload\":\"%s\",\"engine\":\"tsstore\",\"metric\":\"rows_per_sec\",' '%s' | sed -E 's/.*\"%s\":([0-9]+).*\"rows\":([0-9]+).*/\\1: \\2/' | tr '\\n' ',' | sed 's/,$//; s/,/, /g'", workload, in, x))

color(e) = e eq "tsstore" ? "#d62728" : e eq "hash" ? "#1f77b4" : e eq "lmdb" ? "#2ca02c" : "#7f7f7f"
size_label(x) = x >= 1024 ? sprintf("%d kB", x / 1024) : sprintf("%d B", x)

set terminal pngcairo size 1000,560 font "sans,10" noenhanced
set key top left
set grid
set logscale x 2
set logscale y

set output out_batch
set xrange [0.7:6000]
set title sprintf("absorb: reference rows (host, ts, ten int64; about 99 B), sync none, best run of each engine\nrows per point (batch: rows): %s", rows_of("absorb_batch", "batch"))
set xlabel "rows per batch: per ts_insert call, per LMDB write transaction (log scale)"
set ylabel "rows per second (log scale)"
plot for [e in engines_batch] series("absorb_batch", e, "rows_per_sec") using 1:2:xtic(sprintf("%d", $1)) with linespoints lw 1.5 pt 7 lc rgb color(e) title e

set output out_rowsize
set xrange [22:95000]
set title sprintf("absorb: rows of each size as tsstore encodes them (up to 128 B int64 columns, then a blob), batches of 512, sync none\nrows per point (bytes: rows): %s", rows_of("absorb_rowsize", "row_size"))
set xlabel "row size (log scale)"
set ylabel "MB per second of rows (log scale)"
plot for [e in engines_rowsize] series("absorb_rowsize", e, "MB_per_sec") using 1:2:xtic(size_label($1)) with linespoints lw 1.5 pt 7 lc rgb color(e) title e
