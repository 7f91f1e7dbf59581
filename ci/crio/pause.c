/*
 * The sandbox process of the CRI-O lane's pause image (ci/crio.sh builds it static).
 *
 * A pod's infra process is its PID namespace's init. The kernel delivers no signal to such an
 * init whose disposition is the default, so a pause that installs no handler (the harness's
 * `registry.k8s.io/pause:3.9` runs `sleep`) outlives the SIGTERM CRI-O sends first at
 * StopPodSandbox and dies only at the SIGKILL after the stop timeout. This one blocks TERM,
 * INT and CHLD and takes them with sigwaitinfo(2): a blocked signal is queued whatever its
 * disposition, so TERM and INT end it at once (exit 0), and CHLD reaps the processes the pod
 * leaves to it, as an init must.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	sigset_t wanted;
	siginfo_t info;

	if (argc > 1 && strcmp(argv[1], "-v") == 0) {
		puts("cri-harness crio pause");
		return 0;
	}
	sigemptyset(&wanted);
	sigaddset(&wanted, SIGTERM);
	sigaddset(&wanted, SIGINT);
	sigaddset(&wanted, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &wanted, NULL) != 0) {
		perror("pause: sigprocmask");
		return 1;
	}
	for (;;) {
		if (sigwaitinfo(&wanted, &info) < 0) {
			if (errno == EINTR)
				continue;
			perror("pause: sigwaitinfo");
			return 1;
		}
		if (info.si_signo != SIGCHLD)
			return 0;
		/* One CHLD may stand for several children: reap every one that has exited. */
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
}
