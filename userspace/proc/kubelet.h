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

#endif
