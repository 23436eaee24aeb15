/*
 * test_influxql.c -- the InfluxQL parser and printer (wire/influxql.c).
 * Each case is an input and the exact text expected of it: its tree as
 * iql_dump writes it (every node's kind and members), its canonical text
 * (iql_format), or the exact error message.  Every input is also printed
 * and parsed again, which must give the same tree and text.
 *
 * The error messages, and the acceptance of every input of grammar_cases
 * and tsbs_cases, were checked against influxd 1.6.7 (Debian's influxdb),
 * running, given the same inputs through /query: same message, position
 * included, for every case of error_cases.
 *
 * In the trees: (call NAME/FN ...) gives enum iql_fn's value; (time 'TEXT'
 * NS) is a string that reads as a time; (neg X) is -X, which InfluxDB
 * reads as -1 * X; (from db.rp.name), "-" for a part not written; (key OP
 * ...) is enum iql_key_op's value.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/influxql.h"

struct tcase {
	const char *in, *want;
};

struct tsbs_case {
	const char *name, *in, *text, *tree;
};

/* Every TSBS cpu-only query type, as tsbs_generate_queries writes it for
 * InfluxDB (cmd/tsbs_generate_queries/databases/influx/devops.go), with
 * concrete hosts and times: the input, its canonical text, its tree. */
static const struct tsbs_case tsbs_cases[] = {
	{"single-groupby-1-1-1",
	 "SELECT max(usage_user) from cpu where (hostname = 'host_9') and time >= '2016-01-01T10:31:26Z' and time < '2016-01-01T11:31:26Z' group by time(1m)",
	 "SELECT max(usage_user) FROM cpu WHERE (hostname = 'host_9') AND time >= '2016-01-01T10:31:26Z' AND time < '2016-01-01T11:31:26Z' GROUP BY time(1m)",
	 "(select (fields (call max/3 (ref usage_user))) (from cpu) (where (AND (AND (paren (= (ref hostname) (str 'host_9'))) (>= (ref time) (time '2016-01-01T10:31:26Z' 1451644286000000000))) (< (ref time) (time '2016-01-01T11:31:26Z' 1451647886000000000)))) (group (call time/12 (dur 60000000000)) every=60000000000 offset=0))"},
	{"single-groupby-1-1-12",
	 "SELECT max(usage_user) from cpu where (hostname = 'host_9') and time >= '2016-01-01T10:31:26Z' and time < '2016-01-01T22:31:26Z' group by time(1m)",
	 "SELECT max(usage_user) FROM cpu WHERE (hostname = 'host_9') AND time >= '2016-01-01T10:31:26Z' AND time < '2016-01-01T22:31:26Z' GROUP BY time(1m)",
	 "(select (fields (call max/3 (ref usage_user))) (from cpu) (where (AND (AND (paren (= (ref hostname) (str 'host_9'))) (>= (ref time) (time '2016-01-01T10:31:26Z' 1451644286000000000))) (< (ref time) (time '2016-01-01T22:31:26Z' 1451687486000000000)))) (group (call time/12 (dur 60000000000)) every=60000000000 offset=0))"},
	{"single-groupby-1-8-1",
	 "SELECT max(usage_user) from cpu where (hostname = 'host_9' or hostname = 'host_3' or hostname = 'host_7' or hostname = 'host_1' or hostname = 'host_2' or hostname = 'host_5' or hostname = 'host_8' or hostname = 'host_4') and time >= '2016-01-01T10:31:26Z' and time < '2016-01-01T11:31:26Z' group by time(1m)",
	 "SELECT max(usage_user) FROM cpu WHERE (hostname = 'host_9' OR hostname = 'host_3' OR hostname = 'host_7' OR hostname = 'host_1' OR hostname = 'host_2' OR hostname = 'host_5' OR hostname = 'host_8' OR hostname = 'host_4') AND time >= '2016-01-01T10:31:26Z' AND time < '2016-01-01T11:31:26Z' GROUP BY time(1m)",
	 "(select (fields (call max/3 (ref usage_user))) (from cpu) (where (AND (AND (paren (OR (OR (OR (OR (OR (OR (OR (= (ref hostname) (str 'host_9')) (= (ref hostname) (str 'host_3'))) (= (ref hostname) (str 'host_7'))) (= (ref hostname) (str 'host_1'))) (= (ref hostname) (str 'host_2'))) (= (ref hostname) (str 'host_5'))) (= (ref hostname) (str 'host_8'))) (= (ref hostname) (str 'host_4')))) (>= (ref time) (time '2016-01-01T10:31:26Z' 1451644286000000000))) (< (ref time) (time '2016-01-01T11:31:26Z' 1451647886000000000)))) (group (call time/12 (dur 60000000000)) every=60000000000 offset=0))"},
	{"single-groupby-5-1-1",
	 "SELECT max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait) from cpu where (hostname = 'host_9') and time >= '2016-01-01T10:31:26Z' and time < '2016-01-01T11:31:26Z' group by time(1m)",
	 "SELECT max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait) FROM cpu WHERE (hostname = 'host_9') AND time >= '2016-01-01T10:31:26Z' AND time < '2016-01-01T11:31:26Z' GROUP BY time(1m)",
	 "(select (fields (call max/3 (ref usage_user)) (call max/3 (ref usage_system)) (call max/3 (ref usage_idle)) (call max/3 (ref usage_nice)) (call max/3 (ref usage_iowait))) (from cpu) (where (AND (AND (paren (= (ref hostname) (str 'host_9'))) (>= (ref time) (time '2016-01-01T10:31:26Z' 1451644286000000000))) (< (ref time) (time '2016-01-01T11:31:26Z' 1451647886000000000)))) (group (call time/12 (dur 60000000000)) every=60000000000 offset=0))"},
	{"single-groupby-5-1-12",
	 "SELECT max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait) from cpu where (hostname = 'host_9') and time >= '2016-01-01T10:31:26Z' and time < '2016-01-01T22:31:26Z' group by time(1m)",
	 "SELECT max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait) FROM cpu WHERE (hostname = 'host_9') AND time >= '2016-01-01T10:31:26Z' AND time < '2016-01-01T22:31:26Z' GROUP BY time(1m)",
	 "(select (fields (call max/3 (ref usage_user)) (call max/3 (ref usage_system)) (call max/3 (ref usage_idle)) (call max/3 (ref usage_nice)) (call max/3 (ref usage_iowait))) (from cpu) (where (AND (AND (paren (= (ref hostname) (str 'host_9'))) (>= (ref time) (time '2016-01-01T10:31:26Z' 1451644286000000000))) (< (ref time) (time '2016-01-01T22:31:26Z' 1451687486000000000)))) (group (call time/12 (dur 60000000000)) every=60000000000 offset=0))"},
	{"single-groupby-5-8-1",
	 "SELECT max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait) from cpu where (hostname = 'host_9' or hostname = 'host_3' or hostname = 'host_7' or hostname = 'host_1' or hostname = 'host_2' or hostname = 'host_5' or hostname = 'host_8' or hostname = 'host_4') and time >= '2016-01-01T10:31:26Z' and time < '2016-01-01T11:31:26Z' group by time(1m)",
	 "SELECT max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait) FROM cpu WHERE (hostname = 'host_9' OR hostname = 'host_3' OR hostname = 'host_7' OR hostname = 'host_1' OR hostname = 'host_2' OR hostname = 'host_5' OR hostname = 'host_8' OR hostname = 'host_4') AND time >= '2016-01-01T10:31:26Z' AND time < '2016-01-01T11:31:26Z' GROUP BY time(1m)",
	 "(select (fields (call max/3 (ref usage_user)) (call max/3 (ref usage_system)) (call max/3 (ref usage_idle)) (call max/3 (ref usage_nice)) (call max/3 (ref usage_iowait))) (from cpu) (where (AND (AND (paren (OR (OR (OR (OR (OR (OR (OR (= (ref hostname) (str 'host_9')) (= (ref hostname) (str 'host_3'))) (= (ref hostname) (str 'host_7'))) (= (ref hostname) (str 'host_1'))) (= (ref hostname) (str 'host_2'))) (= (ref hostname) (str 'host_5'))) (= (ref hostname) (str 'host_8'))) (= (ref hostname) (str 'host_4')))) (>= (ref time) (time '2016-01-01T10:31:26Z' 1451644286000000000))) (< (ref time) (time '2016-01-01T11:31:26Z' 1451647886000000000)))) (group (call time/12 (dur 60000000000)) every=60000000000 offset=0))"},
	{"cpu-max-all-1",
	 "SELECT max(usage_user),max(usage_system),max(usage_idle),max(usage_nice),max(usage_iowait),max(usage_irq),max(usage_softirq),max(usage_steal),max(usage_guest),max(usage_guest_nice) from cpu where (hostname = 'host_9') and time >= '2016-01-02T03:00:00Z' and time < '2016-01-02T11:00:00Z' group by time(1h)",
	 "SELECT max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait), max(usage_irq), max(usage_softirq), max(usage_steal), max(usage_guest), max(usage_guest_nice) FROM cpu WHERE (hostname = 'host_9') AND time >= '2016-01-02T03:00:00Z' AND time < '2016-01-02T11:00:00Z' GROUP BY time(1h)",
	 "(select (fields (call max/3 (ref usage_user)) (call max/3 (ref usage_system)) (call max/3 (ref usage_idle)) (call max/3 (ref usage_nice)) (call max/3 (ref usage_iowait)) (call max/3 (ref usage_irq)) (call max/3 (ref usage_softirq)) (call max/3 (ref usage_steal)) (call max/3 (ref usage_guest)) (call max/3 (ref usage_guest_nice))) (from cpu) (where (AND (AND (paren (= (ref hostname) (str 'host_9'))) (>= (ref time) (time '2016-01-02T03:00:00Z' 1451703600000000000))) (< (ref time) (time '2016-01-02T11:00:00Z' 1451732400000000000)))) (group (call time/12 (dur 3600000000000)) every=3600000000000 offset=0))"},
	{"cpu-max-all-8",
	 "SELECT max(usage_user),max(usage_system),max(usage_idle),max(usage_nice),max(usage_iowait),max(usage_irq),max(usage_softirq),max(usage_steal),max(usage_guest),max(usage_guest_nice) from cpu where (hostname = 'host_9' or hostname = 'host_3' or hostname = 'host_7' or hostname = 'host_1' or hostname = 'host_2' or hostname = 'host_5' or hostname = 'host_8' or hostname = 'host_4') and time >= '2016-01-02T03:00:00Z' and time < '2016-01-02T11:00:00Z' group by time(1h)",
	 "SELECT max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait), max(usage_irq), max(usage_softirq), max(usage_steal), max(usage_guest), max(usage_guest_nice) FROM cpu WHERE (hostname = 'host_9' OR hostname = 'host_3' OR hostname = 'host_7' OR hostname = 'host_1' OR hostname = 'host_2' OR hostname = 'host_5' OR hostname = 'host_8' OR hostname = 'host_4') AND time >= '2016-01-02T03:00:00Z' AND time < '2016-01-02T11:00:00Z' GROUP BY time(1h)",
	 "(select (fields (call max/3 (ref usage_user)) (call max/3 (ref usage_system)) (call max/3 (ref usage_idle)) (call max/3 (ref usage_nice)) (call max/3 (ref usage_iowait)) (call max/3 (ref usage_irq)) (call max/3 (ref usage_softirq)) (call max/3 (ref usage_steal)) (call max/3 (ref usage_guest)) (call max/3 (ref usage_guest_nice))) (from cpu) (where (AND (AND (paren (OR (OR (OR (OR (OR (OR (OR (= (ref hostname) (str 'host_9')) (= (ref hostname) (str 'host_3'))) (= (ref hostname) (str 'host_7'))) (= (ref hostname) (str 'host_1'))) (= (ref hostname) (str 'host_2'))) (= (ref hostname) (str 'host_5'))) (= (ref hostname) (str 'host_8'))) (= (ref hostname) (str 'host_4')))) (>= (ref time) (time '2016-01-02T03:00:00Z' 1451703600000000000))) (< (ref time) (time '2016-01-02T11:00:00Z' 1451732400000000000)))) (group (call time/12 (dur 3600000000000)) every=3600000000000 offset=0))"},
	{"double-groupby-1",
	 "SELECT mean(usage_user) from cpu where time >= '2016-01-01T06:12:45Z' and time < '2016-01-01T18:12:45Z' group by time(1h),hostname",
	 "SELECT mean(usage_user) FROM cpu WHERE time >= '2016-01-01T06:12:45Z' AND time < '2016-01-01T18:12:45Z' GROUP BY time(1h), hostname",
	 "(select (fields (call mean/1 (ref usage_user))) (from cpu) (where (AND (>= (ref time) (time '2016-01-01T06:12:45Z' 1451628765000000000)) (< (ref time) (time '2016-01-01T18:12:45Z' 1451671965000000000)))) (group (call time/12 (dur 3600000000000)) (ref hostname) every=3600000000000 offset=0))"},
	{"double-groupby-5",
	 "SELECT mean(usage_user), mean(usage_system), mean(usage_idle), mean(usage_nice), mean(usage_iowait) from cpu where time >= '2016-01-01T06:12:45Z' and time < '2016-01-01T18:12:45Z' group by time(1h),hostname",
	 "SELECT mean(usage_user), mean(usage_system), mean(usage_idle), mean(usage_nice), mean(usage_iowait) FROM cpu WHERE time >= '2016-01-01T06:12:45Z' AND time < '2016-01-01T18:12:45Z' GROUP BY time(1h), hostname",
	 "(select (fields (call mean/1 (ref usage_user)) (call mean/1 (ref usage_system)) (call mean/1 (ref usage_idle)) (call mean/1 (ref usage_nice)) (call mean/1 (ref usage_iowait))) (from cpu) (where (AND (>= (ref time) (time '2016-01-01T06:12:45Z' 1451628765000000000)) (< (ref time) (time '2016-01-01T18:12:45Z' 1451671965000000000)))) (group (call time/12 (dur 3600000000000)) (ref hostname) every=3600000000000 offset=0))"},
	{"double-groupby-all",
	 "SELECT mean(usage_user), mean(usage_system), mean(usage_idle), mean(usage_nice), mean(usage_iowait), mean(usage_irq), mean(usage_softirq), mean(usage_steal), mean(usage_guest), mean(usage_guest_nice) from cpu where time >= '2016-01-01T06:12:45Z' and time < '2016-01-01T18:12:45Z' group by time(1h),hostname",
	 "SELECT mean(usage_user), mean(usage_system), mean(usage_idle), mean(usage_nice), mean(usage_iowait), mean(usage_irq), mean(usage_softirq), mean(usage_steal), mean(usage_guest), mean(usage_guest_nice) FROM cpu WHERE time >= '2016-01-01T06:12:45Z' AND time < '2016-01-01T18:12:45Z' GROUP BY time(1h), hostname",
	 "(select (fields (call mean/1 (ref usage_user)) (call mean/1 (ref usage_system)) (call mean/1 (ref usage_idle)) (call mean/1 (ref usage_nice)) (call mean/1 (ref usage_iowait)) (call mean/1 (ref usage_irq)) (call mean/1 (ref usage_softirq)) (call mean/1 (ref usage_steal)) (call mean/1 (ref usage_guest)) (call mean/1 (ref usage_guest_nice))) (from cpu) (where (AND (>= (ref time) (time '2016-01-01T06:12:45Z' 1451628765000000000)) (< (ref time) (time '2016-01-01T18:12:45Z' 1451671965000000000)))) (group (call time/12 (dur 3600000000000)) (ref hostname) every=3600000000000 offset=0))"},
	{"high-cpu-1",
	 "SELECT * from cpu where usage_user > 90.0 and (hostname = 'host_9') and time >= '2016-01-01T02:17:08Z' and time < '2016-01-01T14:17:08Z'",
	 "SELECT * FROM cpu WHERE usage_user > 90.0 AND (hostname = 'host_9') AND time >= '2016-01-01T02:17:08Z' AND time < '2016-01-01T14:17:08Z'",
	 "(select (fields (*)) (from cpu) (where (AND (AND (AND (> (ref usage_user) (float 90)) (paren (= (ref hostname) (str 'host_9')))) (>= (ref time) (time '2016-01-01T02:17:08Z' 1451614628000000000))) (< (ref time) (time '2016-01-01T14:17:08Z' 1451657828000000000)))))"},
	{"high-cpu-all",
	 "SELECT * from cpu where usage_user > 90.0  and time >= '2016-01-01T02:17:08Z' and time < '2016-01-01T14:17:08Z'",
	 "SELECT * FROM cpu WHERE usage_user > 90.0 AND time >= '2016-01-01T02:17:08Z' AND time < '2016-01-01T14:17:08Z'",
	 "(select (fields (*)) (from cpu) (where (AND (AND (> (ref usage_user) (float 90)) (>= (ref time) (time '2016-01-01T02:17:08Z' 1451614628000000000))) (< (ref time) (time '2016-01-01T14:17:08Z' 1451657828000000000)))))"},
	{"lastpoint",
	 "SELECT * from cpu group by \"hostname\" order by time desc limit 1",
	 "SELECT * FROM cpu GROUP BY \"hostname\" ORDER BY time DESC LIMIT 1",
	 "(select (fields (*)) (from cpu) (group (ref \"hostname\")) (order desc) (limit 1))"},
	{"groupby-orderby-limit",
	 "SELECT max(usage_user) from cpu WHERE time < '2016-01-01T12:31:26Z' group by time(1m) limit 5",
	 "SELECT max(usage_user) FROM cpu WHERE time < '2016-01-01T12:31:26Z' GROUP BY time(1m) LIMIT 5",
	 "(select (fields (call max/3 (ref usage_user))) (from cpu) (where (< (ref time) (time '2016-01-01T12:31:26Z' 1451651486000000000))) (group (call time/12 (dur 60000000000)) every=60000000000 offset=0) (limit 5))"},
};

/* Each feature of the grammar: the input and its tree. */
static const struct tcase grammar_cases[] = {
	{"SELECT usage_user FROM cpu",
	 "(select (fields (ref usage_user)) (from cpu))"},
	{"SELECT * FROM cpu",
	 "(select (fields (*)) (from cpu))"},
	{"SELECT mean(a) AS m, min(a), max(a), sum(a), count(a), first(a), last(a), spread(a), stddev(a), percentile(a, 95), percentile(a, 99.9) AS p FROM cpu",
	 "(select (fields (call mean/1 (ref a)) as m (call min/2 (ref a)) (call max/3 (ref a)) (call sum/4 (ref a)) (call count/5 (ref a)) (call first/6 (ref a)) (call last/7 (ref a)) (call spread/8 (ref a)) (call stddev/9 (ref a)) (call percentile/10 (ref a) (int 95)) (call percentile/10 (ref a) (float 99.900000000000006)) as p) (from cpu))"},
	{"SELECT MEAN(a), count(*), a AS \"my alias\" FROM cpu",
	 "(select (fields (call MEAN/1 (ref a)) (call count/5 (*)) (ref a) as \"my alias\") (from cpu))"},
	{"SELECT a * 2 + b / 3 - c % 4 FROM cpu",
	 "(select (fields (- (+ (* (ref a) (int 2)) (/ (ref b) (int 3))) (% (ref c) (int 4)))) (from cpu))"},
	{"SELECT -a, - 1.5, +2, -(a + b) FROM cpu",
	 "(select (fields (neg (ref a)) (float -1.5) (int 2) (neg (paren (+ (ref a) (ref b))))) (from cpu))"},
	{"SELECT a FROM cpu, \"disk io\", mydb.autogen.mem, mydb..net, rp.swap, /^k.*/",
	 "(select (fields (ref a)) (from cpu \"disk io\" mydb.autogen.mem mydb.-.net -.rp.swap /^k.*/))"},
	{"SELECT a FROM \"my.db\".\"rp\".\"m\"",
	 "(select (fields (ref a)) (from \"my.db\".\"rp\".\"m\"))"},
	{"SELECT max(a) FROM (SELECT mean(a) AS a FROM cpu GROUP BY time(1m), hostname) GROUP BY time(1h)",
	 "(select (fields (call max/3 (ref a))) (from (select (fields (call mean/1 (ref a)) as a) (from cpu) (group (call time/12 (dur 60000000000)) (ref hostname) every=60000000000 offset=0))) (group (call time/12 (dur 3600000000000)) every=3600000000000 offset=0))"},
	{"SELECT a FROM cpu WHERE hostname = 'h1' AND region != 'eu' AND dc =~ /^us-/ AND rack !~ /x/",
	 "(select (fields (ref a)) (from cpu) (where (AND (AND (AND (= (ref hostname) (str 'h1')) (!= (ref region) (str 'eu'))) (=~ (ref dc) (regex /^us-/))) (!~ (ref rack) (regex /x/)))))"},
	{"SELECT a FROM cpu WHERE usage = 1 OR usage != 2.5 OR usage < -3 OR usage <= .5 OR usage > 1. OR usage >= 7",
	 "(select (fields (ref a)) (from cpu) (where (OR (OR (OR (OR (OR (= (ref usage) (int 1)) (!= (ref usage) (float 2.5))) (< (ref usage) (int -3))) (<= (ref usage) (float 0.5))) (> (ref usage) (float 1))) (>= (ref usage) (int 7)))))"},
	{"SELECT a FROM cpu WHERE ok = true AND bad = false AND owner = 'it\\'s' AND \"quoted tag\" = 'v'",
	 "(select (fields (ref a)) (from cpu) (where (AND (AND (AND (= (ref ok) (bool true)) (= (ref bad) (bool false))) (= (ref owner) (str 'it\\'s'))) (= (ref \"quoted tag\") (str 'v')))))"},
	{"SELECT a FROM cpu WHERE a <> 1",
	 "(select (fields (ref a)) (from cpu) (where (!= (ref a) (int 1))))"},
	{"SELECT mean(a) FROM cpu GROUP BY time(10m)",
	 "(select (fields (call mean/1 (ref a))) (from cpu) (group (call time/12 (dur 600000000000)) every=600000000000 offset=0))"},
	{"SELECT mean(a) FROM cpu GROUP BY time(1h, 15m), hostname, \"region\", *",
	 "(select (fields (call mean/1 (ref a))) (from cpu) (group (call time/12 (dur 3600000000000) (dur 900000000000)) (ref hostname) (ref \"region\") (*) every=3600000000000 offset=900000000000))"},
	{"SELECT mean(a) FROM cpu GROUP BY time(1d, -1h) fill(none)",
	 "(select (fields (call mean/1 (ref a))) (from cpu) (group (call time/12 (dur 86400000000000) (dur -3600000000000)) every=86400000000000 offset=-3600000000000) (fill none))"},
	{"SELECT mean(a) FROM cpu GROUP BY time(1m) fill(null)",
	 "(select (fields (call mean/1 (ref a))) (from cpu) (group (call time/12 (dur 60000000000)) every=60000000000 offset=0) (fill null))"},
	{"SELECT mean(a) FROM cpu GROUP BY time(1m) fill(previous)",
	 "(select (fields (call mean/1 (ref a))) (from cpu) (group (call time/12 (dur 60000000000)) every=60000000000 offset=0) (fill previous))"},
	{"SELECT mean(a) FROM cpu GROUP BY time(1m) fill(linear)",
	 "(select (fields (call mean/1 (ref a))) (from cpu) (group (call time/12 (dur 60000000000)) every=60000000000 offset=0) (fill linear))"},
	{"SELECT mean(a) FROM cpu GROUP BY time(1m) fill(0)",
	 "(select (fields (call mean/1 (ref a))) (from cpu) (group (call time/12 (dur 60000000000)) every=60000000000 offset=0) (fill 0))"},
	{"SELECT mean(a) FROM cpu GROUP BY time(1m) fill(-1)",
	 "(select (fields (call mean/1 (ref a))) (from cpu) (group (call time/12 (dur 60000000000)) every=60000000000 offset=0) (fill -1))"},
	{"SELECT mean(a) FROM cpu GROUP BY time(1m) fill(2.5)",
	 "(select (fields (call mean/1 (ref a))) (from cpu) (group (call time/12 (dur 60000000000)) every=60000000000 offset=0) (fill 2.5))"},
	{"SELECT a FROM cpu ORDER BY time",
	 "(select (fields (ref a)) (from cpu) (order asc))"},
	{"SELECT a FROM cpu ORDER BY time ASC",
	 "(select (fields (ref a)) (from cpu) (order asc))"},
	{"SELECT a FROM cpu ORDER BY time DESC",
	 "(select (fields (ref a)) (from cpu) (order desc))"},
	{"SELECT a FROM cpu ORDER BY DESC",
	 "(select (fields (ref a)) (from cpu) (order desc))"},
	{"SELECT a FROM cpu LIMIT 10 OFFSET 20 SLIMIT 3 SOFFSET 4",
	 "(select (fields (ref a)) (from cpu) (limit 10) (offset 20) (slimit 3) (soffset 4))"},
	{"SELECT a FROM cpu LIMIT 99999999999999999999",
	 "(select (fields (ref a)) (from cpu) (limit 9223372036854775807))"},
	{"SELECT a FROM cpu WHERE a OR b AND c",
	 "(select (fields (ref a)) (from cpu) (where (OR (ref a) (AND (ref b) (ref c)))))"},
	{"SELECT a FROM cpu WHERE a AND b OR c",
	 "(select (fields (ref a)) (from cpu) (where (OR (AND (ref a) (ref b)) (ref c))))"},
	{"SELECT a FROM cpu WHERE (a OR b) AND c",
	 "(select (fields (ref a)) (from cpu) (where (AND (paren (OR (ref a) (ref b))) (ref c))))"},
	{"SELECT a FROM cpu WHERE a = 1 OR b = 2 AND c = 3 OR d = 4",
	 "(select (fields (ref a)) (from cpu) (where (OR (OR (= (ref a) (int 1)) (AND (= (ref b) (int 2)) (= (ref c) (int 3)))) (= (ref d) (int 4)))))"},
	{"SELECT a FROM cpu WHERE x + 1 * 2 > y - 3 / 4",
	 "(select (fields (ref a)) (from cpu) (where (> (+ (ref x) (* (int 1) (int 2))) (- (ref y) (/ (int 3) (int 4))))))"},
	{"SELECT a FROM cpu WHERE a - b - c = 0",
	 "(select (fields (ref a)) (from cpu) (where (= (- (- (ref a) (ref b)) (ref c)) (int 0))))"},
	{"SELECT a FROM cpu WHERE a =~ /x/ AND b = 1",
	 "(select (fields (ref a)) (from cpu) (where (AND (=~ (ref a) (regex /x/)) (= (ref b) (int 1)))))"},
	{"SELECT a FROM cpu WHERE time > now() - 1h",
	 "(select (fields (ref a)) (from cpu) (where (> (ref time) (- (call now/11) (dur 3600000000000)))))"},
	{"SELECT a FROM cpu WHERE time >= now() - 1w AND time < now() + 1d - 15m",
	 "(select (fields (ref a)) (from cpu) (where (AND (>= (ref time) (- (call now/11) (dur 604800000000000))) (< (ref time) (- (+ (call now/11) (dur 86400000000000)) (dur 900000000000))))))"},
	{"SELECT a FROM cpu WHERE time > now() - 10s - 100ms - 1u - 1ns",
	 "(select (fields (ref a)) (from cpu) (where (> (ref time) (- (- (- (- (call now/11) (dur 10000000000)) (dur 100000000)) (dur 1000)) (dur 1)))))"},
	{"SELECT a FROM cpu WHERE time > now() - 1h30m",
	 "(select (fields (ref a)) (from cpu) (where (> (ref time) (- (call now/11) (dur 5400000000000)))))"},
	{"SELECT a FROM cpu WHERE time > now() - 10µ",
	 "(select (fields (ref a)) (from cpu) (where (> (ref time) (- (call now/11) (dur 10000)))))"},
	{"SELECT a FROM cpu WHERE time >= '2016-01-01T00:00:00Z' + 1h AND time < '2016-01-01T00:00:00Z' - 1m",
	 "(select (fields (ref a)) (from cpu) (where (AND (>= (ref time) (+ (time '2016-01-01T00:00:00Z' 1451606400000000000) (dur 3600000000000))) (< (ref time) (- (time '2016-01-01T00:00:00Z' 1451606400000000000) (dur 60000000000))))))"},
	{"SELECT a FROM cpu WHERE time >= '2016-01-01T00:00:00.5Z' AND time < '2016-01-02T01:00:00+01:00'",
	 "(select (fields (ref a)) (from cpu) (where (AND (>= (ref time) (time '2016-01-01T00:00:00.5Z' 1451606400500000000)) (< (ref time) (time '2016-01-02T01:00:00+01:00' 1451692800000000000)))))"},
	{"SELECT a FROM cpu WHERE time >= '2016-01-01' AND time < '2016-01-01 12:00:00'",
	 "(select (fields (ref a)) (from cpu) (where (AND (>= (ref time) (time '2016-01-01' 1451606400000000000)) (< (ref time) (time '2016-01-01 12:00:00' 1451649600000000000)))))"},
	{"SELECT a FROM cpu WHERE time >= 1451606400000000000 AND time < 1451606400000000000 + 1h",
	 "(select (fields (ref a)) (from cpu) (where (AND (>= (ref time) (int 1451606400000000000)) (< (ref time) (+ (int 1451606400000000000) (dur 3600000000000))))))"},
	{"SELECT a FROM cpu WHERE time >= -9223372036854775808",
	 "(select (fields (ref a)) (from cpu) (where (>= (ref time) (int -9223372036854775808))))"},
	{"SELECT a FROM cpu WHERE time > 'not a time' AND time < '2016-02-30T00:00:00Z'",
	 "(select (fields (ref a)) (from cpu) (where (AND (> (ref time) (str 'not a time')) (< (ref time) (str '2016-02-30T00:00:00Z')))))"},
	{"SELECT a FROM cpu WHERE path =~ /\\/var\\/log\\// AND host =~ /a\\.b\\d/",
	 "(select (fields (ref a)) (from cpu) (where (AND (=~ (ref path) (regex /\\/var\\/log\\//)) (=~ (ref host) (regex /a\\.b\\d/)))))"},
	{"SELECT a FROM /a\\/b/",
	 "(select (fields (ref a)) (from /a\\/b/))"},
	{"SELECT \"a\\\"b\", \"a\\\\b\", \"select\", \"with space\", \"new\\nline\" FROM \"from\"",
	 "(select (fields (ref \"a\\\"b\") (ref \"a\\\\b\") (ref \"select\") (ref \"with space\") (ref \"new\\nline\")) (from \"from\"))"},
	{"SELECT a FROM cpu WHERE t = 'x\\\\y' AND u = 'a\\nb' AND v = 'q\"r'",
	 "(select (fields (ref a)) (from cpu) (where (AND (AND (= (ref t) (str 'x\\\\y')) (= (ref u) (str 'a\\nb'))) (= (ref v) (str 'q\"r')))))"},
	{"SELECT /^usage_/ FROM cpu",
	 "(select (fields (regex /^usage_/)) (from cpu))"},
	{"SELECT max(/^usage_/), count(a) FROM cpu",
	 "(select (fields (call max/3 (regex /^usage_/)) (call count/5 (ref a))) (from cpu))"},
	{"SHOW MEASUREMENTS WITH MEASUREMENT = /cpu/",
	 "(show-measurements (key 4 /cpu/))"},
	{"SHOW MEASUREMENTS WITH MEASUREMENT =~ cpu",
	 "(show-measurements (key 1 cpu))"},
	{"SELECT a FROM b WHERE x =~ /(?i)^a\\.b\\d(?:c|d)[\\]x]/",
	 "(select (fields (ref a)) (from b) (where (=~ (ref x) (regex /(?i)^a\\.b\\d(?:c|d)[\\]x]/))))"},
	{"SELECT a FROM b WHERE c = 1 /* a /* nested? */ AND d = 2",
	 "(select (fields (ref a)) (from b) (where (AND (= (ref c) (int 1)) (= (ref d) (int 2)))))"},
	{"SELECT a FROM cpu WHERE -a < -(b + c) AND d = - 1",
	 "(select (fields (ref a)) (from cpu) (where (AND (< (neg (ref a)) (neg (paren (+ (ref b) (ref c))))) (= (ref d) (int -1)))))"},
	{"SELECT a FROM b WHERE x = ''",
	 "(select (fields (ref a)) (from b) (where (= (ref x) (str ''))))"},
	{"SELECT a -- a comment\nFROM cpu WHERE /* another */ b = 1 /**/",
	 "(select (fields (ref a)) (from cpu) (where (= (ref b) (int 1))))"},
	{"SELECT a FROM b ORDER BY time -- a comment",
	 "(select (fields (ref a)) (from b) (order asc))"},
	{"select A from B where TIME > NOW() - 1h",
	 "(select (fields (ref A)) (from B) (where (> (ref TIME) (- (call NOW/11) (dur 3600000000000)))))"},
	{"SELECT mean(\"usage_idle\") FROM \"autogen\".\"cpu\" WHERE (\"host\" =~ /^server1$/) AND time >= 1546300800000ms and time <= 1546304400000ms GROUP BY time(10s), \"host\" fill(null)",
	 "(select (fields (call mean/1 (ref \"usage_idle\"))) (from -.\"autogen\".\"cpu\") (where (AND (AND (paren (=~ (ref \"host\") (regex /^server1$/))) (>= (ref time) (dur 1546300800000000000))) (<= (ref time) (dur 1546304400000000000)))) (group (call time/12 (dur 10000000000)) (ref \"host\") every=10000000000 offset=0) (fill null))"},
	{"SELECT last(\"value\") FROM \"mem\" WHERE time > now() - 5m ORDER BY time DESC LIMIT 1",
	 "(select (fields (call last/7 (ref \"value\"))) (from \"mem\") (where (> (ref time) (- (call now/11) (dur 300000000000)))) (order desc) (limit 1))"},
	{"SHOW DATABASES",
	 "(show-databases)"},
	{"SHOW MEASUREMENTS",
	 "(show-measurements)"},
	{"SHOW MEASUREMENTS ON telegraf WITH MEASUREMENT =~ /cpu.*/ WHERE host = 'a' LIMIT 10 OFFSET 5",
	 "(show-measurements (on telegraf) (key 4 /cpu.*/) (where (= (ref host) (str 'a'))) (limit 10) (offset 5))"},
	{"SHOW MEASUREMENTS WITH MEASUREMENT = cpu",
	 "(show-measurements (key 1 cpu))"},
	{"SHOW TAG KEYS",
	 "(show-tag-keys)"},
	{"SHOW TAG KEYS FROM cpu",
	 "(show-tag-keys (from cpu))"},
	{"SHOW TAG KEYS ON db FROM cpu, mem WHERE host = 'a' LIMIT 1",
	 "(show-tag-keys (on db) (from cpu mem) (where (= (ref host) (str 'a'))) (limit 1))"},
	{"SHOW TAG VALUES WITH KEY = hostname",
	 "(show-tag-values (key 1 hostname))"},
	{"SHOW TAG VALUES FROM cpu WITH KEY = \"hostname\"",
	 "(show-tag-values (from cpu) (key 1 \"hostname\"))"},
	{"SHOW TAG VALUES FROM cpu WITH KEY != hostname",
	 "(show-tag-values (from cpu) (key 2 hostname))"},
	{"SHOW TAG VALUES FROM cpu WITH KEY IN (hostname, \"region\")",
	 "(show-tag-values (from cpu) (key 3 hostname \"region\"))"},
	{"SHOW TAG VALUES WITH KEY =~ /host.*/ WHERE region = 'eu' LIMIT 2 OFFSET 1",
	 "(show-tag-values (key 4 /host.*/) (where (= (ref region) (str 'eu'))) (limit 2) (offset 1))"},
	{"SHOW TAG VALUES WITH KEY !~ /^_/",
	 "(show-tag-values (key 5 /^_/))"},
	{"SHOW FIELD KEYS",
	 "(show-field-keys)"},
	{"SHOW FIELD KEYS FROM cpu",
	 "(show-field-keys (from cpu))"},
	{"SHOW SERIES",
	 "(show-series)"},
	{"SHOW SERIES FROM cpu WHERE hostname = 'host_1' LIMIT 5",
	 "(show-series (from cpu) (where (= (ref hostname) (str 'host_1'))) (limit 5))"},
	{"CREATE DATABASE telegraf",
	 "(create-database telegraf)"},
	{"CREATE DATABASE \"my db\"",
	 "(create-database \"my db\")"},
};

/* Inputs whose canonical text differs from them: the input and its text. */
static const struct tcase format_cases[] = {
	{"SELECT -a, - 1.5, +2, -(a + b) FROM cpu",
	 "SELECT -a, -1.5, 2, -(a + b) FROM cpu"},
	{"SELECT a FROM cpu WHERE usage = 1 OR usage != 2.5 OR usage < -3 OR usage <= .5 OR usage > 1. OR usage >= 7",
	 "SELECT a FROM cpu WHERE usage = 1 OR usage != 2.5 OR usage < -3 OR usage <= 0.5 OR usage > 1.0 OR usage >= 7"},
	{"SELECT a FROM cpu WHERE a <> 1",
	 "SELECT a FROM cpu WHERE a != 1"},
	{"SELECT a FROM cpu ORDER BY time",
	 "SELECT a FROM cpu ORDER BY time ASC"},
	{"SELECT a FROM cpu ORDER BY DESC",
	 "SELECT a FROM cpu ORDER BY time DESC"},
	{"SELECT a FROM cpu LIMIT 99999999999999999999",
	 "SELECT a FROM cpu LIMIT 9223372036854775807"},
	{"SELECT a FROM cpu WHERE time > now() - 1h30m",
	 "SELECT a FROM cpu WHERE time > now() - 90m"},
	{"SELECT a FROM cpu WHERE time > now() - 10µ",
	 "SELECT a FROM cpu WHERE time > now() - 10u"},
	{"SHOW MEASUREMENTS WITH MEASUREMENT = /cpu/",
	 "SHOW MEASUREMENTS WITH MEASUREMENT =~ /cpu/"},
	{"SHOW MEASUREMENTS WITH MEASUREMENT =~ cpu",
	 "SHOW MEASUREMENTS WITH MEASUREMENT = cpu"},
	{"SELECT a FROM b WHERE c = 1 /* a /* nested? */ AND d = 2",
	 "SELECT a FROM b WHERE c = 1 AND d = 2"},
	{"SELECT a FROM cpu WHERE -a < -(b + c) AND d = - 1",
	 "SELECT a FROM cpu WHERE -a < -(b + c) AND d = -1"},
	{"SELECT a -- a comment\nFROM cpu WHERE /* another */ b = 1 /**/",
	 "SELECT a FROM cpu WHERE b = 1"},
	{"SELECT a FROM b ORDER BY time -- a comment",
	 "SELECT a FROM b ORDER BY time ASC"},
	{"select A from B where TIME > NOW() - 1h",
	 "SELECT A FROM B WHERE TIME > NOW() - 1h"},
	{"SELECT mean(\"usage_idle\") FROM \"autogen\".\"cpu\" WHERE (\"host\" =~ /^server1$/) AND time >= 1546300800000ms and time <= 1546304400000ms GROUP BY time(10s), \"host\" fill(null)",
	 "SELECT mean(\"usage_idle\") FROM \"autogen\".\"cpu\" WHERE (\"host\" =~ /^server1$/) AND time >= 17897d AND time <= 429529h GROUP BY time(10s), \"host\" fill(null)"},
};

/* Refusals, each message exactly as influxd 1.6.7 gives it for the same
 * input (checked side by side with a running influxd 1.6.7: position
 * quirks included). */
static const struct tcase error_cases[] = {
	{"FOO",
	 "error parsing query: found FOO, expected SELECT, DELETE, SHOW, CREATE, DROP, EXPLAIN, GRANT, REVOKE, ALTER, SET, KILL at line 1, char 1"},
	{"SELECT",
	 "error parsing query: found EOF, expected identifier, string, number, bool at line 1, char 8"},
	{"SELECT FROM x",
	 "error parsing query: found FROM, expected identifier, string, number, bool at line 1, char 8"},
	{"SELECT a",
	 "error parsing query: found EOF, expected FROM at line 1, char 10"},
	{"SELECT a ",
	 "error parsing query: found EOF, expected FROM at line 1, char 10"},
	{"SELECT a FROM",
	 "error parsing query: found EOF, expected identifier at line 1, char 15"},
	{"SELECT a,",
	 "error parsing query: found EOF, expected identifier, string, number, bool at line 1, char 11"},
	{"SELECT a AS",
	 "error parsing query: found EOF, expected identifier at line 1, char 13"},
	{"SELECT a FROM b,",
	 "error parsing query: found EOF, expected identifier at line 1, char 18"},
	{"SELECT a FROM b.",
	 "error parsing query: found EOF, expected identifier at line 1, char 18"},
	{"SELECT a FROM b WHERE",
	 "error parsing query: found EOF, expected identifier, string, number, bool at line 1, char 23"},
	{"SELECT a FROM b WHERE (",
	 "error parsing query: found EOF, expected identifier, string, number, bool at line 1, char 24"},
	{"SELECT a FROM b WHERE x =",
	 "error parsing query: found EOF, expected identifier, string, number, bool at line 1, char 26"},
	{"SELECT a FROM b WHERE x !=",
	 "error parsing query: found EOF, expected identifier, string, number, bool at line 1, char 27"},
	{"SELECT a FROM b WHERE x =~",
	 "error parsing query: found EOF, expected regex at line 1, char 28"},
	{"SELECT a FROM b WHERE x = 1 +",
	 "error parsing query: found EOF, expected identifier, string, number, bool at line 1, char 30"},
	{"SELECT a FROM b WHERE x = 1 AND",
	 "error parsing query: found EOF, expected identifier, string, number, bool at line 1, char 33"},
	{"SELECT a FROM b WHERE x = 'a' 'b'",
	 "error parsing query: found b, expected ; at line 1, char 30"},
	{"SELECT a FROM b WHERE x = -",
	 "error parsing query: found EOF, expected identifier, number, duration, ( at line 1, char 28"},
	{"SELECT a FROM b WHERE x = /a/ AND",
	 "error parsing query: found /, expected identifier, string, number, bool at line 1, char 27"},
	{"SELECT a FROM b WHERE x = 1 #",
	 "error parsing query: found #, expected ; at line 1, char 29"},
	{"SELECT a FROM b WHERE x = 'abc",
	 "error parsing query: found abc, expected identifier, string, number, bool at line 1, char 26"},
	{"SELECT a FROM b WHERE x='abc",
	 "error parsing query: found abc, expected identifier, string, number, bool at line 1, char 24"},
	{"SELECT a FROM b WHERE x = 'a\nb'",
	 "error parsing query: found a, expected identifier, string, number, bool at line 1, char 26"},
	{"SELECT a FROM b WHERE x = 'a\\qb'",
	 "error parsing query: found \\q, expected identifier, string, number, bool at line 1, char 30"},
	{"SELECT \"a\\qb\" FROM b",
	 "error parsing query: found \\q, expected identifier, string, number, bool at line 1, char 11"},
	{"SELECT a FROM \"b",
	 "error parsing query: found b, expected identifier at line 1, char 14"},
	{"SELECT \"a\"\"b\" FROM b",
	 "error parsing query: found b, expected FROM at line 1, char 11"},
	{"SELECT a\nFROM b\nWHERE x =",
	 "error parsing query: found EOF, expected identifier, string, number, bool at line 3, char 10"},
	{"SELECT a FROM b WHERE x = 'ü' AND",
	 "error parsing query: found EOF, expected identifier, string, number, bool at line 1, char 35"},
	{"SELECT a FROM b WHERE x =~ /abc",
	 "error parsing query: bad regex:  at line 1, char 27"},
	{"SELECT a FROM b WHERE x =~ /a\nb/",
	 "error parsing query: bad regex:  at line 1, char 27"},
	{"SELECT a FROM b WHERE x =~ /a(/",
	 "error parsing query: error parsing regexp: missing closing ): `a(` at line 1, char 27"},
	{"SELECT a FROM b WHERE x =~ /a)/",
	 "error parsing query: error parsing regexp: unexpected ): `a)` at line 1, char 27"},
	{"SELECT a FROM b WHERE x =~ /[a/",
	 "error parsing query: error parsing regexp: missing closing ]: `[a` at line 1, char 27"},
	{"SELECT a FROM b WHERE x =~ /*a/",
	 "error parsing query: error parsing regexp: missing argument to repetition operator: `*` at line 1, char 27"},
	{"SELECT a FROM b WHERE x=~/a(/",
	 "error parsing query: error parsing regexp: missing closing ): `a(` at line 1, char 25"},
	{"SELECT a FROM b WHERE time > now() - 1x",
	 "error parsing query: invalid duration"},
	{"SELECT a FROM b WHERE x = 1e5",
	 "error parsing query: invalid duration"},
	{"SELECT a FROM b WHERE time > now() - 1H",
	 "error parsing query: invalid duration"},
	{"SELECT a FROM b WHERE time > now() - 1h1",
	 "error parsing query: invalid duration"},
	{"SELECT a FROM b WHERE time > now() - 10µs",
	 "error parsing query: invalid duration"},
	{"SELECT a FROM b GROUP BY time(1x)",
	 "error parsing query: invalid duration"},
	{"SELECT a FROM b WHERE x = 1.5h",
	 "error parsing query: found h, expected ; at line 1, char 30"},
	{"SELECT a FROM b WHERE x = 99999999999999999999",
	 "error parsing query: unable to parse integer at line 1, char 27"},
	{"SELECT mean (a) FROM b",
	 "error parsing query: found (, expected FROM at line 1, char 13"},
	{"SELECT mean(a",
	 "error parsing query: found EOF, expected ) at line 1, char 15"},
	{"SELECT mean(a,",
	 "error parsing query: found EOF, expected identifier, string, number, bool at line 1, char 16"},
	{"SELECT mean(1",
	 "error parsing query: found EOF, expected ) at line 1, char 14"},
	{"SELECT mean('a'",
	 "error parsing query: found EOF, expected ) at line 1, char 16"},
	{"SELECT a FROM b GROUP BY",
	 "error parsing query: found EOF, expected identifier, string, number, bool at line 1, char 26"},
	{"SELECT a FROM b GROUP BY time(",
	 "error parsing query: found EOF, expected identifier, string, number, bool at line 1, char 32"},
	{"SELECT a FROM b GROUP BY time(1m",
	 "error parsing query: found EOF, expected ) at line 1, char 33"},
	{"SELECT a FROM b GROUP BY time(1m,",
	 "error parsing query: found EOF, expected identifier, string, number, bool at line 1, char 35"},
	{"SELECT a FROM b fill",
	 "error parsing query: fill must be a function call"},
	{"SELECT a FROM b fill(1, 2)",
	 "error parsing query: fill requires an argument, e.g.: 0, null, none, previous, linear"},
	{"SELECT a FROM b fill(1) + 1",
	 "error parsing query: fill must be a function call"},
	{"SELECT a FROM b fill(foo)",
	 "error parsing query: expected number argument in fill()"},
	{"SELECT a FROM b ORDER",
	 "error parsing query: found EOF, expected BY at line 1, char 23"},
	{"SELECT a FROM b ORDER BY",
	 "error parsing query: found EOF, expected identifier, ASC, DESC at line 1, char 26"},
	{"SELECT a FROM b ORDER BY foo",
	 "error parsing query: only ORDER BY time supported at this time"},
	{"SELECT a FROM b ORDER BY time ASC, a",
	 "error parsing query: only ORDER BY time supported at this time"},
	{"SELECT a FROM b LIMIT",
	 "error parsing query: found EOF, expected integer at line 1, char 23"},
	{"SELECT a FROM b LIMIT -1",
	 "error parsing query: found -, expected integer at line 1, char 23"},
	{"SELECT a FROM b LIMIT x",
	 "error parsing query: found x, expected integer at line 1, char 23"},
	{"SELECT a FROM b SLIMIT",
	 "error parsing query: found EOF, expected integer at line 1, char 24"},
	{"SELECT * FROM b LIMIT 1 SOFFSET",
	 "error parsing query: found EOF, expected integer at line 1, char 33"},
	{"SELECT a FROM b OFFSET 1 LIMIT 1",
	 "error parsing query: found LIMIT, expected ; at line 1, char 26"},
	{"SELECT a FROM b extra",
	 "error parsing query: found extra, expected ; at line 1, char 17"},
	{"SELECT a FROM a.b.c.d",
	 "error parsing query: too many segments in \"a\".\"b\".\"c\".d at line 1, char 1"},
	{"SELECT a FROM (SHOW DATABASES)",
	 "error parsing query: found SHOW, expected SELECT at line 1, char 16"},
	{"SHOW",
	 "error parsing query: found EOF, expected CONTINUOUS, DATABASES, DIAGNOSTICS, FIELD, GRANTS, MEASUREMENT, MEASUREMENTS, QUERIES, RETENTION, SERIES, SHARD, SHARDS, STATS, SUBSCRIPTIONS, TAG, USERS at line 1, char 6"},
	{"SHOW FOO",
	 "error parsing query: found FOO, expected CONTINUOUS, DATABASES, DIAGNOSTICS, FIELD, GRANTS, MEASUREMENT, MEASUREMENTS, QUERIES, RETENTION, SERIES, SHARD, SHARDS, STATS, SUBSCRIPTIONS, TAG, USERS at line 1, char 6"},
	{"SHOW TAG",
	 "error parsing query: found EOF, expected KEY, KEYS, VALUES at line 1, char 10"},
	{"SHOW FIELD",
	 "error parsing query: found EOF, expected KEY, KEYS at line 1, char 12"},
	{"SHOW TAG VALUES FROM cpu",
	 "error parsing query: found EOF, expected WITH at line 1, char 26"},
	{"SHOW TAG VALUES WITH KEY",
	 "error parsing query: found EOF, expected IN, =, =~ at line 1, char 26"},
	{"SHOW TAG VALUES WITH KEY =",
	 "error parsing query: found EOF, expected identifier at line 1, char 27"},
	{"SHOW TAG VALUES WITH KEY IN",
	 "error parsing query: found EOF, expected ( at line 1, char 29"},
	{"SHOW TAG VALUES WITH KEY IN (",
	 "error parsing query: found EOF, expected identifier at line 1, char 30"},
	{"SHOW MEASUREMENTS ON",
	 "error parsing query: found EOF, expected identifier at line 1, char 22"},
	{"CREATE",
	 "error parsing query: found EOF, expected CONTINUOUS, DATABASE, USER, RETENTION, SUBSCRIPTION at line 1, char 8"},
	{"CREATE DATABASE",
	 "error parsing query: found EOF, expected identifier at line 1, char 17"},
	{"SELECT a FROM b; FOO",
	 "error parsing query: found FOO, expected SELECT, DELETE, SHOW, CREATE, DROP, EXPLAIN, GRANT, REVOKE, ALTER, SET, KILL at line 1, char 18"},
	{"SELECT a = 1 FROM b",
	 "error parsing query: invalid operator = in SELECT clause at line 1, char 8; operator is intended for WHERE clause"},
	{"SELECT mean(a), b AND c FROM d",
	 "error parsing query: invalid operator AND in SELECT clause at line 1, char 17; operator is intended for WHERE clause"},
	{"SELECT max(a > 1) FROM d",
	 "error parsing query: invalid operator > in SELECT clause at line 1, char 8; operator is intended for WHERE clause"},
	{"SELECT a + (b OR c) + (d < e) FROM f",
	 "error parsing query: invalid operator < in SELECT clause at line 1, char 8; operator is intended for WHERE clause"},
	{"SELECT 'x' = a FROM b",
	 "error parsing query: invalid operator = in SELECT clause at line 1, char 7; operator is intended for WHERE clause"},
	{"SELECT a FROM b WHERE x =~ /a\\T/",
	 "error parsing query: error parsing regexp: invalid escape sequence: `\\T` at line 1, char 27"},
	{"SELECT a FROM b WHERE x =~ /(?F)/",
	 "error parsing query: error parsing regexp: invalid or unsupported Perl syntax: `(?F` at line 1, char 27"},
	{"SELECT a /* unterminated FROM b",
	 "error parsing query: found ILLEGAL, expected FROM at line 1, char 10"},
	{"SELECT a FROM b WHERE c = 1 /* unterminated",
	 "error parsing query: found ILLEGAL, expected ; at line 1, char 29"},
	{"SELECT a FROM a..c.bg",
	 "error parsing query: too many segments in \"a\"..\"c\".bg at line 1, char 1"},
	{"SELECT a FROM b...cg",
	 "error parsing query: too many segments in \"b\"...cg at line 1, char 1"},
	{"SELECT a FROM c....*3",
	 "error parsing query: found *, expected identifier at line 1, char 20"},
	{"SELECT\"a\" FROM b",
	 "error parsing query: found a, expected SELECT, DELETE, SHOW, CREATE, DROP, EXPLAIN, GRANT, REVOKE, ALTER, SET, KILL at line 1, char 1"},
	{"SELECT mean(a) FROM b GROUP BY time(0m) fill",
	 "error parsing query: fill must be a function call"},
	{" \"\\\\",
	 "error parsing query: found \\, expected SELECT, DELETE, SHOW, CREATE, DROP, EXPLAIN, GRANT, REVOKE, ALTER, SET, KILL at line 1, char 1"},
};

/* Statements InfluxDB parses but refuses when it compiles them: its
 * statement error (influxd 1.6.7 words), as IQL_EINVALID. */
static const struct tcase invalid_cases[] = {
	{"SELECT a FROM b GROUP BY time(10)",
	 "time dimension must have duration argument"},
	{"SELECT mean(a) FROM b GROUP BY time(1m), time(1h)",
	 "multiple time dimensions not allowed"},
	{"SELECT mean(a) FROM b GROUP BY mean(a)",
	 "only time() calls allowed in dimensions"},
	{"SELECT mean(a) FROM b GROUP BY 'x'",
	 "only time and tag dimensions allowed"},
	{"SELECT a FROM b GROUP BY time(1m, 10)",
	 "time dimension offset must be duration or now()"},
	{"SELECT percentile(a) FROM b",
	 "invalid number of arguments for percentile, expected 2, got 1"},
	{"SELECT mean( ) FROM b",
	 "invalid number of arguments for mean, expected 1, got 0"},
	{"SELECT mean(a, b) FROM b",
	 "invalid number of arguments for mean, expected 1, got 2"},
};

/* InfluxQL that InfluxDB takes but the subset does not: refused in
 * InfluxDB's form, naming what the subset takes. */
static const struct tcase unsupported_cases[] = {
	{"DROP DATABASE nosuch",
	 "error parsing query: found DROP, expected SELECT, SHOW, CREATE at line 1, char 1"},
	{"DELETE FROM cpu",
	 "error parsing query: found DELETE, expected SELECT, SHOW, CREATE at line 1, char 1"},
	{"SHOW RETENTION POLICIES",
	 "error parsing query: found RETENTION, expected DATABASES, FIELD, MEASUREMENTS, SERIES, TAG at line 1, char 6"},
	{"CREATE USER x WITH PASSWORD 'y'",
	 "error parsing query: found USER, expected DATABASE at line 1, char 8"},
	{"SELECT a::field FROM b",
	 "error parsing query: found :, expected FROM at line 1, char 9"},
	{"SELECT a.b FROM c",
	 "error parsing query: found ., expected FROM at line 1, char 9"},
};

/* in parsed: its one statement, whose text printed parses back to the same
 * tree and text; the tree into tree, the text into text. */
static void parse_one(const char *in, char *tree, size_t treesize, char *text, size_t textsize)
{
	struct iql_query q, again;
	char err[IQL_ERR_MAX] = "", tree2[8192], text2[8192];
	int rc = iql_parse(in, strlen(in), &q, err, sizeof err);
	if (rc != 0)
		fail_msg("'%s' refused (%d): %s", in, rc, err);
	assert_int_equal(q.nstmts, 1);
	assert_true(iql_dump(&q.stmts[0], tree, treesize) < treesize);
	assert_true(iql_format(&q.stmts[0], text, textsize) < textsize);
	rc = iql_parse(text, strlen(text), &again, err, sizeof err);
	if (rc != 0)
		fail_msg("'%s' printed as '%s', refused: %s", in, text, err);
	assert_int_equal(again.nstmts, 1);
	iql_dump(&again.stmts[0], tree2, sizeof tree2);
	iql_format(&again.stmts[0], text2, sizeof text2);
	assert_string_equal(tree2, tree);
	assert_string_equal(text2, text);
	iql_query_free(&again);
	iql_query_free(&q);
}

static void check_tree(const char *in, const char *want)
{
	char tree[8192], text[8192];
	parse_one(in, tree, sizeof tree, text, sizeof text);
	if (strcmp(tree, want) != 0)
		fail_msg("'%s':\n  got  %s\n  want %s", in, tree, want);
}

static void check_error(const char *in, int code, const char *want)
{
	struct iql_query q;
	char err[IQL_ERR_MAX] = "";
	int rc = iql_parse(in, strlen(in), &q, err, sizeof err);
	if (rc != code || strcmp(err, want) != 0)
		fail_msg("'%s':\n  got  %d %s\n  want %d %s", in, rc, err, code, want);
	assert_null(q.stmts);
	assert_int_equal(q.nstmts, 0);
}

static void influxql_tsbs_cpu_only(void **state)
{
	char tree[8192], text[8192];
	for (size_t i = 0; i < sizeof tsbs_cases / sizeof tsbs_cases[0]; i++) {
		const struct tsbs_case *c = &tsbs_cases[i];
		parse_one(c->in, tree, sizeof tree, text, sizeof text);
		if (strcmp(text, c->text) != 0 || strcmp(tree, c->tree) != 0)
			fail_msg("%s:\n  got  %s\n       %s\n  want %s\n       %s", c->name, text, tree,
			         c->text, c->tree);
	}
}

/* What an executor reads of TSBS single-groupby-1-1-1, member by member. */
static void influxql_tsbs_as_executor_sees_it(void **state)
{
	struct iql_query q;
	const char *in = tsbs_cases[0].in;
	assert_int_equal(iql_parse(in, strlen(in), &q, NULL, 0), 0);
	assert_int_equal(q.nstmts, 1);
	assert_int_equal(q.stmts[0].kind, IQL_SELECT);
	const struct iql_select *s = q.stmts[0].select;
	assert_int_equal(s->nfields, 1);
	assert_int_equal(s->fields[0].expr->kind, IQL_E_CALL);
	assert_int_equal(s->fields[0].expr->fn, IQL_FN_MAX);
	assert_int_equal(s->fields[0].expr->nargs, 1);
	assert_string_equal(s->fields[0].expr->args[0]->name.s, "usage_user");
	assert_null(s->fields[0].alias.s);
	assert_int_equal(s->nsources, 1);
	assert_int_equal(s->sources[0].kind, IQL_SRC_MEASUREMENT);
	assert_string_equal(s->sources[0].name.s, "cpu");
	assert_null(s->sources[0].db.s);
	assert_null(s->sources[0].rp.s);
	assert_true(s->has_group_time);
	assert_int_equal(s->group_interval, 60000000000LL);
	assert_int_equal(s->group_offset, 0);
	assert_false(s->has_fill);
	assert_int_equal(s->fill, IQL_FILL_NULL);
	/* ((hostname = 'host_9') AND time >= T0) AND time < T1 */
	const struct iql_expr *w = s->where;
	assert_int_equal(w->kind, IQL_E_BINARY);
	assert_int_equal(w->op, IQL_OP_AND);
	assert_int_equal(w->rhs->op, IQL_OP_LT);
	assert_string_equal(w->rhs->lhs->name.s, "time");
	assert_int_equal(w->rhs->rhs->kind, IQL_E_STRING);
	assert_true(w->rhs->rhs->is_time);
	assert_int_equal(w->rhs->rhs->i, 1451647886000000000LL);
	assert_int_equal(w->lhs->op, IQL_OP_AND);
	assert_int_equal(w->lhs->rhs->op, IQL_OP_GTE);
	assert_int_equal(w->lhs->rhs->rhs->i, 1451644286000000000LL);
	const struct iql_expr *host = w->lhs->lhs;
	assert_int_equal(host->kind, IQL_E_PAREN);
	assert_int_equal(host->lhs->op, IQL_OP_EQ);
	assert_string_equal(host->lhs->lhs->name.s, "hostname");
	assert_false(host->lhs->lhs->name.quoted);
	assert_string_equal(host->lhs->rhs->str, "host_9");
	assert_int_equal(host->lhs->rhs->len, 6);
	assert_false(host->lhs->rhs->is_time);
	iql_query_free(&q);
	iql_query_free(&q); /* freed twice: the second does nothing */
}

static void influxql_grammar(void **state)
{
	for (size_t i = 0; i < sizeof grammar_cases / sizeof grammar_cases[0]; i++)
		check_tree(grammar_cases[i].in, grammar_cases[i].want);
}

static void influxql_format_canonical(void **state)
{
	char tree[8192], text[8192];
	for (size_t i = 0; i < sizeof format_cases / sizeof format_cases[0]; i++) {
		parse_one(format_cases[i].in, tree, sizeof tree, text, sizeof text);
		if (strcmp(text, format_cases[i].want) != 0)
			fail_msg("'%s':\n  got  %s\n  want %s", format_cases[i].in, text, format_cases[i].want);
	}
}

/* Strings, quoted identifiers and regexes hold their text unescaped. */
static void influxql_unescaped_text(void **state)
{
	struct iql_query q;
	const char *in = "SELECT \"a\\\"b\\\\c\" AS \"x\\ny\" FROM \"my db\"..\"cpu\" "
	                 "WHERE t = 'it\\'s' AND p =~ /\\/var\\/log\\.d/";
	assert_int_equal(iql_parse(in, strlen(in), &q, NULL, 0), 0);
	const struct iql_select *s = q.stmts[0].select;
	assert_string_equal(s->fields[0].expr->name.s, "a\"b\\c");
	assert_int_equal(s->fields[0].expr->name.len, 5);
	assert_true(s->fields[0].expr->name.quoted);
	assert_string_equal(s->fields[0].alias.s, "x\ny");
	assert_string_equal(s->sources[0].db.s, "my db");
	assert_null(s->sources[0].rp.s);
	assert_string_equal(s->sources[0].name.s, "cpu");
	assert_string_equal(s->where->lhs->rhs->str, "it's");
	assert_int_equal(s->where->rhs->rhs->kind, IQL_E_REGEX);
	assert_string_equal(s->where->rhs->rhs->str, "/var/log\\.d");
	iql_query_free(&q);
}

static void influxql_statements(void **state)
{
	struct iql_query q;
	char text[256];
	const char *in = ";; SELECT a FROM b ;SHOW DATABASES;\n CREATE DATABASE c;";
	assert_int_equal(iql_parse(in, strlen(in), &q, NULL, 0), 0);
	assert_int_equal(q.nstmts, 3);
	assert_int_equal(q.stmts[0].kind, IQL_SELECT);
	assert_int_equal(q.stmts[1].kind, IQL_SHOW_DATABASES);
	assert_int_equal(q.stmts[2].kind, IQL_CREATE_DATABASE);
	assert_string_equal(q.stmts[2].database.s, "c");
	iql_format(&q.stmts[0], text, sizeof text);
	assert_string_equal(text, "SELECT a FROM b");
	iql_query_free(&q);
	/* nothing but blanks, comments and ';': no statement, no error */
	in = " ; -- nothing\n/* at all */ ;";
	assert_int_equal(iql_parse(in, strlen(in), &q, NULL, 0), 0);
	assert_int_equal(q.nstmts, 0);
	iql_query_free(&q);
	assert_int_equal(iql_parse("", 0, &q, NULL, 0), 0);
	assert_int_equal(q.nstmts, 0);
	iql_query_free(&q);
	/* the text is not NUL-terminated: only len bytes are read */
	assert_int_equal(iql_parse("SHOW DATABASES garbage", 14, &q, NULL, 0), 0);
	assert_int_equal(q.nstmts, 1);
	iql_query_free(&q);
}

static void influxql_errors_as_influxdb(void **state)
{
	for (size_t i = 0; i < sizeof error_cases / sizeof error_cases[0]; i++)
		check_error(error_cases[i].in, IQL_ESYNTAX, error_cases[i].want);
}

static void influxql_invalid_as_influxdb(void **state)
{
	for (size_t i = 0; i < sizeof invalid_cases / sizeof invalid_cases[0]; i++)
		check_error(invalid_cases[i].in, IQL_EINVALID, invalid_cases[i].want);
}

static void influxql_unsupported(void **state)
{
	for (size_t i = 0; i < sizeof unsupported_cases / sizeof unsupported_cases[0]; i++)
		check_error(unsupported_cases[i].in, IQL_ESYNTAX, unsupported_cases[i].want);
}

/* Every keyword of InfluxQL 1.6 (its whole list, which influxd 1.6.7
 * refuses unquoted as a measurement) is reserved here too, in any case;
 * quoted, it is a name. */
static void influxql_keywords_reserved(void **state)
{
	static const char *const kws[] = {
		"ALL", "ALTER", "ANALYZE", "AND", "ANY", "AS", "ASC", "BEGIN", "BY", "CARDINALITY",
		"CONTINUOUS", "CREATE", "DATABASE", "DATABASES", "DEFAULT", "DELETE", "DESC",
		"DESTINATIONS", "DIAGNOSTICS", "DISTINCT", "DROP", "DURATION", "END", "EVERY", "EXACT",
		"EXPLAIN", "FALSE", "FIELD", "FOR", "FROM", "GRANT", "GRANTS", "GROUP", "GROUPS", "IN",
		"INF", "INSERT", "INTO", "KEY", "KEYS", "KILL", "LIMIT", "MEASUREMENT", "MEASUREMENTS",
		"NAME", "OFFSET", "ON", "OR", "ORDER", "PASSWORD", "POLICIES", "POLICY", "PRIVILEGES",
		"QUERIES", "QUERY", "READ", "REPLICATION", "RESAMPLE", "RETENTION", "REVOKE", "SELECT",
		"SERIES", "SET", "SHARD", "SHARDS", "SHOW", "SLIMIT", "SOFFSET", "STATS", "SUBSCRIPTION",
		"SUBSCRIPTIONS", "TAG", "TO", "TRUE", "USER", "USERS", "VALUES", "WHERE", "WITH",
		"WRITE",
	};
	char in[64], want[160], lower[32];
	struct iql_query q;
	for (size_t i = 0; i < sizeof kws / sizeof kws[0]; i++) {
		size_t n = strlen(kws[i]);
		for (size_t k = 0; k <= n; k++)
			lower[k] = (char)(kws[i][k] >= 'A' && kws[i][k] <= 'Z' ? kws[i][k] + 32 : kws[i][k]);
		snprintf(in, sizeof in, "SELECT a FROM %s", lower);
		snprintf(want, sizeof want, "error parsing query: found %s, expected identifier at line 1, char 15", kws[i]);
		check_error(in, IQL_ESYNTAX, want);
		snprintf(in, sizeof in, "SELECT a FROM \"%s\"", lower);
		assert_int_equal(iql_parse(in, strlen(in), &q, NULL, 0), 0);
		assert_string_equal(q.stmts[0].select->sources[0].name.s, lower);
		iql_query_free(&q);
	}
	/* words around them are names */
	static const char *const names[] = {"A", "al", "ALLx", "selects", "zzz", "_", "time", "now", "fill"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(in, sizeof in, "SELECT a FROM %s", names[i]);
		assert_int_equal(iql_parse(in, strlen(in), &q, NULL, 0), 0);
		iql_query_free(&q);
	}
}

/* A q of n copies of unit between head and tail, malloc'ed. */
static char *repeat(const char *head, const char *unit, size_t n, const char *tail)
{
	size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
	char *s = malloc(hl + ul * n + tl + 1), *o = s;
	assert_non_null(s);
	memcpy(o, head, hl), o += hl;
	for (size_t i = 0; i < n; i++)
		memcpy(o, unit, ul), o += ul;
	memcpy(o, tail, tl + 1);
	return s;
}

static void influxql_bounds(void **state)
{
	struct iql_query q;
	char err[IQL_ERR_MAX], want[IQL_ERR_MAX];
	char *s;
	snprintf(want, sizeof want, "error parsing query: expressions nested deeper than %d levels",
	         IQL_DEPTH_MAX);
	/* parentheses */
	s = repeat("SELECT a FROM b WHERE ", "(", 100000, "a");
	assert_int_equal(iql_parse(s, strlen(s), &q, err, sizeof err), IQL_EDEPTH);
	assert_string_equal(err, want);
	free(s);
	/* a chain of operators makes a tree as deep */
	s = repeat("SELECT a FROM b WHERE a = 1", " OR a = 1", IQL_DEPTH_MAX, "");
	assert_int_equal(iql_parse(s, strlen(s), &q, err, sizeof err), IQL_EDEPTH);
	assert_string_equal(err, want);
	free(s);
	s = repeat("SELECT a FROM b WHERE a = 1", " OR a = 1", IQL_DEPTH_MAX - 3, "");
	assert_int_equal(iql_parse(s, strlen(s), &q, err, sizeof err), 0);
	iql_query_free(&q);
	free(s);
	/* sub-queries */
	s = repeat("SELECT a FROM ", "(SELECT a FROM ", 1000, "b");
	assert_int_equal(iql_parse(s, strlen(s), &q, err, sizeof err), IQL_EDEPTH);
	free(s);
	/* the length */
	s = repeat("SELECT a FROM b WHERE a = '", "x", IQL_QUERY_MAX, "'");
	assert_int_equal(iql_parse(s, strlen(s), &q, err, sizeof err), IQL_ETOOBIG);
	snprintf(want, sizeof want, "error parsing query: query longer than %zu bytes",
	         (size_t)IQL_QUERY_MAX);
	assert_string_equal(err, want);
	free(s);
	/* the statements */
	s = repeat("", "SHOW DATABASES;", IQL_STMTS_MAX + 1, "");
	assert_int_equal(iql_parse(s, strlen(s), &q, err, sizeof err), IQL_ETOOBIG);
	snprintf(want, sizeof want, "error parsing query: more than %d statements", IQL_STMTS_MAX);
	assert_string_equal(err, want);
	free(s);
	s = repeat("", "SHOW DATABASES;", IQL_STMTS_MAX, "");
	assert_int_equal(iql_parse(s, strlen(s), &q, err, sizeof err), 0);
	assert_int_equal(q.nstmts, IQL_STMTS_MAX);
	iql_query_free(&q);
	free(s);
	/* a NUL byte */
	assert_int_equal(iql_parse("SELECT a\0 FROM b", 16, &q, err, sizeof err), IQL_ESYNTAX);
	assert_string_equal(err, "error parsing query: illegal NUL byte at line 1, char 9");
	assert_string_equal(iql_strerror(IQL_EDEPTH), "nested too deep");
	assert_string_equal(iql_strerror(1), "unknown error");
}

/* iql_format truncates as snprintf does and says the whole length. */
static void influxql_format_truncates(void **state)
{
	struct iql_query q;
	char buf[8];
	const char *in = "SELECT a FROM b";
	assert_int_equal(iql_parse(in, strlen(in), &q, NULL, 0), 0);
	assert_int_equal(iql_format(&q.stmts[0], NULL, 0), 15);
	assert_int_equal(iql_format(&q.stmts[0], buf, sizeof buf), 15);
	assert_string_equal(buf, "SELECT ");
	assert_int_equal(iql_format_expr(q.stmts[0].select->fields[0].expr, buf, sizeof buf), 1);
	assert_string_equal(buf, "a");
	iql_query_free(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(influxql_tsbs_cpu_only),
		cmocka_unit_test(influxql_tsbs_as_executor_sees_it),
		cmocka_unit_test(influxql_grammar),
		cmocka_unit_test(influxql_format_canonical),
		cmocka_unit_test(influxql_unescaped_text),
		cmocka_unit_test(influxql_statements),
		cmocka_unit_test(influxql_errors_as_influxdb),
		cmocka_unit_test(influxql_invalid_as_influxdb),
		cmocka_unit_test(influxql_unsupported),
		cmocka_unit_test(influxql_keywords_reserved),
		cmocka_unit_test(influxql_bounds),
		cmocka_unit_test(influxql_format_truncates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
