/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Kubernetes names of a pod's container from the kubelet's log directories,
 * read locally, no API call: DIR/containers/POD_NAMESPACE_CONTAINER-ID.log
 * (one symlink per container) and DIR/pods/NAMESPACE_POD_UID/ (one directory
 * per pod). DIR is the host's /var/log, wherever it is mounted. Kubernetes
 * names hold no '_', which makes the file names unambiguous; anything that
 * is not a valid name is ignored.
 */
#ifndef LOOPWATCH_PROC_KUBELET_H
#define LOOPWATCH_PROC_KUBELET_H

#include <stdbool.h>
#include "lib/cgroup.h"

/*
 * Names of the container with this id (64 hex digits) in the pod with this
 * uid; either may be "". True if at least the namespace and pod were found.
 */
bool kubelet__names(const char *log_dir, const char *pod_uid, const char *container_id,
		    struct k8s_names *out);

/*
 * kubelet__names once per pod container: a node's directories hold
 * thousands of entries, and every new loop thread of a pod asks again. A
 * full answer (namespace, pod, container) never changes for a container id
 * and is kept; a partial one or a miss is asked again after
 * KUBELET_RETRY_S (the container's log link may come later). At most
 * KUBELET_CACHE_MAX entries, the oldest replaced.
 */
#define KUBELET_CACHE_MAX 1024
#define KUBELET_RETRY_S 10.0

struct kubelet_cache;

/* NULL when out of memory; log_dir is kept, not copied */
struct kubelet_cache *kubelet_cache__new(const char *log_dir);
void kubelet_cache__free(struct kubelet_cache *c);
bool kubelet_cache__names(struct kubelet_cache *c, const char *pod_uid,
			  const char *container_id, struct k8s_names *out);
/* how many times the directories were read (kubelet__names calls) */
unsigned long kubelet_cache__reads(const struct kubelet_cache *c);

#endif
