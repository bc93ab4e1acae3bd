#define TUNE_VERSION "0.1.0"
