# plot-queries.gp -- the TSBS query types' latency per engine, from the
# data file bench/plot-queries.sh makes out of tsstore-bench's JSON lines
# (columns: x, engine, median µs, p99 µs, rows loaded, "type"; tics: the
# xtics, '"type" x, ...'):
#
#   build/bin/tsstore-bench --workload tsbs_queries > queries.jsonl
#   bench/plot-queries.sh queries.jsonl tsbs-queries.png
if (!exists("data")) data = "queries.dat"
if (!exists("out")) out = "tsbs-queries.png"

color(e) = e eq "tsstored" ? 0xd62728 : e eq "victoriametrics" ? 0x1f77b4 : \
           e eq "influxdb" ? 0x2ca02c : 0x7f7f7f

set terminal pngcairo size 1200,600 font "sans,10"
set output out
stats data using 5 nooutput
set title sprintf("TSBS cpu-only queries over loopback HTTP, %d rows loaded: median latency, error bar up to the p99\ninfluxdb: InfluxQL /query; victoriametrics: the PromQL equivalent, /api/v1/query_range; tsstored: /query", STATS_max) noenhanced
set ylabel "latency, µs"
set logscale y
set format y "10^{%L}"
set grid ytics
set style fill solid 0.8 border -1
set boxwidth 0.25
set key top left
set bmargin 7
set xtics rotate by -35 noenhanced nomirror
set rmargin 16
set xrange [-0.6:*]
# the types under their groups (tics: '"name" x, ...', from plot-queries.sh)
if (exists("tics")) eval("set xtics (" . tics . ")")
# one bar per row, coloured by engine
plot data using 1:3:(color(strcol(2))) with boxes lc rgb variable notitle, \
     '' using 1:3:3:4 with yerrorbars lc rgb "black" pt -1 notitle, \
     NaN with boxes lc rgb "#2ca02c" title "influxdb", \
     NaN with boxes lc rgb "#1f77b4" title "victoriametrics", \
     NaN with boxes lc rgb "#d62728" title "tsstored"
