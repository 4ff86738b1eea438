// The one source of gossamer_test_pch (tests/CMakeLists.txt), the target that builds the
// precompiled header every test binary reuses. It compiles nothing of its own.
