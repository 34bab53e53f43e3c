// libpcap, as installed by libpcap-dev (Debian) or Homebrew's libpcap (macOS).
#include <pcap/pcap.h>
