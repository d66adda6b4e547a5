// Prints the code point ranges PCRE2 (this machine's libpcre2-8, with UTF and
// UCP) puts in \p{L}, \p{N} and \p{P}, one file per class in DIR.
// usage: pcre2_classes DIR
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <cstdio>
#include <string>
int main(int argc, char** argv) {
  const char* pats[] = {"\\p{L}", "\\p{N}", "\\p{P}"};
  const char* names[] = {"L", "N", "P"};
  for (int k = 0; k < 3; ++k) {
    int err; PCRE2_SIZE off;
    pcre2_code* re = pcre2_compile((PCRE2_SPTR)pats[k], PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(re, nullptr);
    std::string path = std::string(argv[1]) + "/pcre_" + names[k] + ".txt";
    FILE* f = fopen(path.c_str(), "w");
    long start = -1;
    for (long cp = 0; cp <= 0x110000; ++cp) {
      bool m = false;
      if (cp < 0x110000 && !(cp >= 0xD800 && cp <= 0xDFFF)) {
        unsigned char buf[4]; int n;
        if (cp < 0x80) { buf[0] = cp; n = 1; } else if (cp < 0x800) { buf[0] = 0xC0 | (cp >> 6); buf[1] = 0x80 | (cp & 63); n = 2; }
        else if (cp < 0x10000) { buf[0] = 0xE0 | (cp >> 12); buf[1] = 0x80 | ((cp >> 6) & 63); buf[2] = 0x80 | (cp & 63); n = 3; }
        else { buf[0] = 0xF0 | (cp >> 18); buf[1] = 0x80 | ((cp >> 12) & 63); buf[2] = 0x80 | ((cp >> 6) & 63); buf[3] = 0x80 | (cp & 63); n = 4; }
        m = pcre2_match(re, buf, n, 0, PCRE2_ANCHORED, md, nullptr) > 0;
      }
      if (m && start < 0) start = cp;
      if (!m && start >= 0) { fprintf(f, "%ld %ld\n", start, cp - 1); start = -1; }
    }
    fclose(f);
  }
}
