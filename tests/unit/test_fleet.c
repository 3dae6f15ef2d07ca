// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What running on a fleet parses: service identity from cgroup paths, the
 * kubelet's file names, and the HTTP requests of scrapers, with random and
 * mutated input besides the real shapes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "lib/cgroup.h"
#include "proc/kubelet.h"
#include "sinks/httpreq.h"

#define CID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID "1d2c3b4a-0000-4111-8222-333344445555"

static void test_identity(void)
{
	static const struct {
		const char *path;
		enum cgroup_kind kind;
		const char *unit, *cid, *uid;
	} cases[] = {
		{ "/system.slice/nginx.service", CGROUP_SYSTEMD, "nginx.service", "", "" },
		{ "/system.slice/nginx.service/worker", CGROUP_SYSTEMD, "nginx.service", "", "" },
		{ "/user.slice/user-1000.slice/user@1000.service/app.slice/app-x-1.scope",
		  CGROUP_SYSTEMD, "app-x-1.scope", "", "" },
		{ "/system.slice/getty@tty1.service", CGROUP_SYSTEMD, "getty@tty1.service", "", "" },
		{ "/system.slice/docker-" CID ".scope", CGROUP_CONTAINER, "", CID, "" },
		{ "/docker/" CID, CGROUP_CONTAINER, "", CID, "" },
		{ "/machine.slice/libpod-" CID ".scope/container", CGROUP_CONTAINER, "", CID, "" },
		{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
		  "1d2c3b4a_0000_4111_8222_333344445555.slice/cri-containerd-" CID ".scope",
		  CGROUP_K8S, "", CID, UID },
		{ "/kubepods.slice/kubepods-pod1d2c3b4a_0000_4111_8222_333344445555.slice/crio-" CID
		  ".scope", CGROUP_K8S, "", CID, UID },
		{ "/kubepods/besteffort/pod" UID "/" CID, CGROUP_K8S, "", CID, UID },
		{ "/kubepods/pod" UID, CGROUP_K8S, "", "", UID },
		/* kind-style: a cluster inside a container */
		{ "/docker/" CID "/kubelet.slice/x/kubepods/pod" UID "/" CID, CGROUP_K8S, "", CID, UID },
		/* kind's systemd driver: the kubelet's slice prefixes every kubepods slice */
		{ "/system.slice/docker-" CID ".scope/kubelet.slice/kubelet-kubepods.slice/"
		  "kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod"
		  "1d2c3b4a_0000_4111_8222_333344445555.slice/cri-containerd-"
		  "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210.scope",
		  CGROUP_K8S, "", "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",
		  UID },
		/* a pod uid outside kubepods is no pod; a bad uid is none */
		{ "/pod" UID, CGROUP_NONE, "", "", "" },
		{ "/kubepods/pod1d2c3b4a-0000-4111-8222-33334444555", CGROUP_NONE, "", "", "" },
		{ "/kubepods/podXd2c3b4a-0000-4111-8222-333344445555", CGROUP_NONE, "", "", "" },
		{ "/", CGROUP_NONE, "", "", "" },
		{ "", CGROUP_NONE, "", "", "" },
		{ "/process_api/44e5adc1792f15fbb5d9e5b730123720", CGROUP_NONE, "", "", "" },
		{ "/x/.service", CGROUP_NONE, "", "", "" },
	};
	struct cgroup_identity id;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cgroup__identity(cases[i].path, &id);
		CHECK(id.kind == cases[i].kind && !strcmp(id.unit, cases[i].unit) &&
		      !strcmp(id.container_id, cases[i].cid) && !strcmp(id.pod_uid, cases[i].uid),
		      "%s: kind %d unit '%s' cid '%s' uid '%s'", cases[i].path, id.kind, id.unit,
		      id.container_id, id.pod_uid);
	}
}

/* Random paths: bounded, terminated outputs, and a kind that agrees with them. */
static void test_identity_random(void)
{
	static const char *parts[] = { "/", "kubepods", "-pod", "pod", UID, CID, ".slice",
				       ".scope", ".service", "docker-", "_", "-", "x", "\xff" };
	char path[1024];
	unsigned int seed = 1;
	int bad = 0;

	for (int i = 0; i < 200000; i++) {
		struct cgroup_identity id;
		size_t len = 0;
		int n = rand_r(&seed) % 12;

		for (int k = 0; k < n; k++) {
			const char *p = parts[rand_r(&seed) % (sizeof(parts) / sizeof(parts[0]))];

			if (len + strlen(p) >= sizeof(path))
				break;
			memcpy(path + len, p, strlen(p));
			len += strlen(p);
		}
		path[len] = '\0';
		cgroup__identity(path, &id);
		if (strlen(id.unit) >= sizeof(id.unit) || (id.pod_uid[0] && strlen(id.pod_uid) != 36) ||
		    (id.container_id[0] && strlen(id.container_id) != 64) ||
		    (id.kind == CGROUP_K8S) != !!id.pod_uid[0] ||
		    (id.kind == CGROUP_SYSTEMD) != !!id.unit[0])
			bad++;
	}
	CHECK(!bad, "%d inconsistent identities out of 200000 random paths", bad);
}

static void touch(const char *dir, const char *name, bool is_dir)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (is_dir) {
		mkdir(path, 0755);
	} else {
		FILE *f = fopen(path, "w");

		if (f)
			fclose(f);
	}
}

static void test_kubelet_names(void)
{
	char dir[] = "/tmp/loopwatch-kubelet-XXXXXX", sub[4200];
	struct k8s_names n;

	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp");
		return;
	}
	touch(dir, "containers", true);
	touch(dir, "pods", true);
	snprintf(sub, sizeof(sub), "%s/containers", dir);
	touch(sub, "checkout-7d9f-x2x_shop_api-" CID ".log", false);
	touch(sub, "evil_pod_Bad-" "1111111111111111111111111111111111111111111111111111111111111111"
		   ".log", false);
	touch(sub, "short_x-" "2222222222222222222222222222222222222222222222222222222222222222.log",
	      false);
	snprintf(sub, sizeof(sub), "%s/pods", dir);
	touch(sub, "shop_checkout-7d9f-x2x_" UID, true);
	touch(sub, "db_pg-0_99999999-0000-4111-8222-333344445555", true);

	CHECK(kubelet__names(dir, UID, CID, &n) && !strcmp(n.ns, "shop") &&
	      !strcmp(n.pod, "checkout-7d9f-x2x") && !strcmp(n.container, "api"),
	      "container file: %s/%s/%s", n.ns, n.pod, n.container);
	CHECK(kubelet__names(dir, "99999999-0000-4111-8222-333344445555",
			     "3333333333333333333333333333333333333333333333333333333333333333", &n) &&
	      !strcmp(n.ns, "db") && !strcmp(n.pod, "pg-0") && !n.container[0],
	      "pod directory only: %s/%s/'%s'", n.ns, n.pod, n.container);
	CHECK(!kubelet__names(dir, "", "1111111111111111111111111111111111111111111111111111111111111111",
			      &n), "an invalid name (capital letter) is ignored");
	CHECK(!kubelet__names(dir, "", "2222222222222222222222222222222222222222222222222222222222222222",
			      &n), "a name without its three parts is ignored");
	CHECK(!kubelet__names("/nonexistent-loopwatch", UID, CID, &n) && !n.ns[0], "no directory");

	/* cached: a pod container's directories are read once, however many threads ask */
	struct kubelet_cache *c = kubelet_cache__new(dir);

	for (int i = 0; c && i < 100; i++) {
		CHECK(kubelet_cache__names(c, UID, CID, &n) && !strcmp(n.container, "api"),
		      "cached container %d: %s", i, n.container);
		kubelet_cache__names(c, "99999999-0000-4111-8222-333344445555", "", &n);
		kubelet_cache__names(c, UID, "", &n);
	}
	/* one read each; the two partial answers are asked again only after the retry time */
	CHECK(c && kubelet_cache__reads(c) == 3, "%lu reads for 300 lookups",
	      c ? kubelet_cache__reads(c) : 0);
	kubelet_cache__free(c);
	snprintf(sub, sizeof(sub), "rm -rf '%s'", dir);
	CHECK(system(sub) == 0, "cleanup");
}

static void test_http_requests(void)
{
	struct http_request r;
	const char *ok = "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n"
			 "Accept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\n\r\n";

	CHECK(http_request__parse(ok, strlen(ok), &r) == 1 && r.method == HTTP_GET &&
	      !strcmp(r.path, "/metrics") && r.openmetrics, "a Prometheus scrape: '%s'", r.path);
	CHECK(http_request__parse(ok, strlen(ok) - 2, &r) == 0, "not whole yet");
	CHECK(http_request__parse("HEAD /healthz HTTP/1.0\n\n", 24, &r) == 1 &&
	      r.method == HTTP_HEAD && !strcmp(r.path, "/healthz") && !r.openmetrics, "HEAD, LF only");
	CHECK(http_request__parse("POST / HTTP/1.1\r\n\r\n", 19, &r) == 1 && r.method == HTTP_OTHER,
	      "other methods are told apart");
	CHECK(http_request__parse("GET /metrics\r\n\r\n", 16, &r) == -1, "HTTP/0.9 is not served");
	CHECK(http_request__parse("GET metrics HTTP/1.1\r\n\r\n", 24, &r) == -1, "not a path");
	CHECK(http_request__parse("\x16\x03\x01\x02\x00\r\n\r\n", 9, &r) == -1, "TLS hello");
	CHECK(http_request__parse("GET /a\0b HTTP/1.1\r\n\r\n", 21, &r) == 1 && !r.path[0],
	      "a NUL in the path matches nothing");
}

/* Random and mutated requests: never past the buffer, a path always terminated. */
static void test_http_random(void)
{
	static const char *seeds[] = {
		"GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text\r\n\r\n",
		"HEAD /healthz HTTP/1.0\n\n",
	};
	unsigned int seed = 7;
	int odd = 0;

	for (int i = 0; i < 300000; i++) {
		const char *s = seeds[i % 2];
		size_t len = strlen(s) + (size_t)(rand_r(&seed) % 8);
		char *buf = malloc(len);
		struct http_request r;
		int ret;

		memcpy(buf, s, len < strlen(s) ? len : strlen(s));
		for (size_t k = strlen(s); k < len; k++)
			buf[k] = (char)rand_r(&seed);
		for (int k = rand_r(&seed) % 6; k > 0; k--)
			buf[rand_r(&seed) % len] = (char)rand_r(&seed);
		len = (size_t)(rand_r(&seed) % (int)len) + 1;
		/* exactly len bytes: a read past them is an ASan error */
		ret = http_request__parse(buf, len, &r);
		if (ret < -1 || ret > 1 || strlen(r.path) >= sizeof(r.path) ||
		    (ret == 1 && r.path[0] && r.path[0] != '/'))
			odd++;
		free(buf);
	}
	CHECK(!odd, "%d odd results out of 300000 mutated requests", odd);
}

int main(void)
{
	test_identity();
	test_identity_random();
	test_kubelet_names();
	test_http_requests();
	test_http_random();
	return check__report();
}
