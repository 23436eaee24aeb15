# plot-ingest.gp -- rows/s of the daemon ingest workloads, one bar per
# engine and protocol, from the data file bench/plot-ingest.sh makes out
# of tsstore-bench's JSON lines (columns: bar, "engine", "protocol",
# median rows/s, min, max):
#
#   build/bin/tsstore-bench --compare --workload ingest --workload ingest_http \
#       --workload remote_write > ingest.jsonl
#   bench/plot-ingest.sh ingest.jsonl ingest-rows.png
if (!exists("data")) data = "ingest.dat"
if (!exists("out")) out = "ingest-rows.png"

color(e) = e eq "tsstored" ? 0xd62728 : e eq "victoriametrics" ? 0x1f77b4 : \
           e eq "influxdb" ? 0x2ca02c : 0x7f7f7f

set terminal pngcairo size 1000,560 font "sans,10"
set output out
set title "Ingest of the TSBS cpu-only file over loopback: 512 rows (remote write: 5120 samples) per request, 2 connections\nmedian of the runs, error bars min..max (JSON lines: the best run); remote write counted in TSBS rows (samples / 10)" noenhanced
set ylabel "rows per second"
set ytics format "%.1s%c"
set yrange [0:*]
set grid ytics
set style fill solid 0.8 border -1
set boxwidth 0.7
set key off
set bmargin 4
set xtics noenhanced
plot data using 1:4:(color(strcol(2))):xtic(strcol(2)."\n".strcol(3)) with boxes lc rgb variable, \
     '' using 1:4:5:6 with yerrorbars lc rgb "black" pt 0, \
     '' using 1:6:(sprintf("%.0fk", $4 / 1000)) with labels offset 0,1 noenhanced
