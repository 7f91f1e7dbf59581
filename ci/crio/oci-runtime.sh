#!/bin/sh
# The CRI-O lane's OCI runtime: runc, behind a filter of what this kind of machine cannot grant.
# ci/crio.sh installs a copy as STATE/bin/runc with the three @...@ values filled in, and names
# it as the handler's runtime_path.
#
# Root here runs without CAP_SYS_RESOURCE in its bounding set. CRI-O asks for two things that
# need it, and has no option to ask otherwise:
#   - an oom_score_adj below our own (every infra container gets -998): runc's nsexec fails
#     to write it;
#   - every capability for a privileged container: runc fails to raise one the bounding set
#     lacks.
# containerd answers the same need with restrict_oom_score_adj and "every capability the
# runtime has". This does the same before runc reads a process spec: on `create` and `run`
# (BUNDLE/config.json, its .process) and `exec --process FILE`, it raises a lower oomScoreAdj
# to our own and takes the missing capabilities out of every set. Nothing else changes, and
# every call ends in runc itself with the arguments it was given.
RUNC='@RUNC@'
# The capabilities the bounding set lacks: a JSON array, and the same names as an ERE
# alternation for a cheap first look (a name no capability has when none is missing).
MISSING_JSON='@MISSING_JSON@'
MISSING_ERE='@MISSING_ERE@'

command='' bundle='' process='' next=''
for arg in "$@"; do
	if [ -n "$next" ]; then
		case $next in
		bundle) bundle=$arg ;;
		process) process=$arg ;;
		esac
		next=''
		continue
	fi
	case $arg in
	--bundle | -b) next=bundle ;;
	--bundle=*) bundle=${arg#*=} ;;
	--process | -p) [ "$command" = exec ] && next=process ;;
	--process=*) process=${arg#*=} ;;
	# runc's global options that take a value, before the command.
	--root | --log | --log-format | --criu | --rootless | --cgroup-manager)
		[ -z "$command" ] && next=value ;;
	-*) ;;
	*) [ -z "$command" ] && command=$arg ;;
	esac
done

spec='' scope=''
case $command in
create | run) spec=${bundle:-.}/config.json scope=.process ;;
exec) spec=$process scope=. ;;
esac

# jq runs only when the spec has something to change: most calls cost one grep.
if [ -n "$spec" ] && [ -f "$spec" ] && grep -qE "\"oomScoreAdj\": *-|$MISSING_ERE" "$spec"; then
	read -r own </proc/self/oom_score_adj
	filtered="$spec.crih.$$"
	if jq -c --argjson own "$own" --argjson missing "$MISSING_JSON" "
		def grantable:
		  (if (.oomScoreAdj? // null) != null and .oomScoreAdj < \$own
		   then .oomScoreAdj = \$own else . end)
		  | (if (.capabilities? // null) != null
		     then .capabilities |= with_entries(
		            if (.value | type) == \"array\"
		            then .value |= map(select(. as \$cap | \$missing | index([\$cap]) | not))
		            else . end)
		     else . end);
		if \"$scope\" == \".process\"
		then (if .process then .process |= grantable else . end)
		else grantable end
	" "$spec" >"$filtered"; then
		mv -f "$filtered" "$spec"
	else
		rm -f "$filtered"
	fi
fi
exec "$RUNC" "$@"
