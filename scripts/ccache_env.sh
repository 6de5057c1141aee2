# Sourced by scripts/setup.sh and scripts/test.sh: compile through ccache where it is installed
# (scripts/apt-packages.txt lists it), so a later run on the same machine — CI on a fresh clone
# included — recompiles only the sources that changed. Paths are hashed relative to the clone
# (CCACHE_BASEDIR), so clones in other directories share the cache. PPSTREAM_CCACHE=0 turns it
# off; a launcher already set in the environment is kept. The result of a compile does not
# depend on this: ccache hashes the compiler, its flags and the preprocessed sources.
if [ "${PPSTREAM_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
  export CMAKE_CXX_COMPILER_LAUNCHER="${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}"
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
fi
