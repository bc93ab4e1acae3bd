/* version.h: tune's version, recorded in every result, bundle and report. It is
 * libtunert's (one number for the project: the CMake project version, checked
 * against runtime/tunert.h when configuring). */
#ifndef TUNE_VERSION_H
#define TUNE_VERSION_H
#include "../runtime/tunert.h"
#define TUNE_VERSION TUNERT_VERSION_STRING
#endif
