// libqrencode, as installed by libqrencode-dev (Debian) or Homebrew's qrencode (macOS).
#include <qrencode.h>
