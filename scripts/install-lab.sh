#!/bin/bash
# Installs the packages of `overload lab` (nginx, Apache, PHP-FPM, mod_php, MariaDB, ab) on
# Debian 12 without starting their system services: the lab runs its own instances from a
# private prefix, and system instances would grab :80/:3306 (nginx and apache2 would even
# fight over :80). Idempotent: a second run installs nothing and changes nothing.
# Usage (as root): bash scripts/install-lab.sh
set -euo pipefail

# Keep this list in sync with src/lab/doctor.rs (PACKAGES).
PACKAGES=(
    nginx apache2 apache2-utils libapache2-mod-php8.2
    php8.2-fpm php8.2-cli php8.2-mysql php8.2-opcache
    mariadb-server mariadb-client curl iproute2 procps
)
# The application stacks' packages (src/lab/doctor.rs, APP_PACKAGES): wordpress (S2),
# gallery (S4), symfony (S3), caddy-fpm (HTTP/3).
APP_PACKAGES=(
    wordpress wordpress-theme-twentytwentyone
    php8.2-gd
    caddy
    php-symfony-http-kernel php-symfony-dependency-injection php-symfony-config
    php-symfony-routing php-twig
)

if [ "$(id -u)" -ne 0 ]; then
    echo "install-lab.sh: must run as root (it calls apt-get install)" >&2
    exit 2
fi

export DEBIAN_FRONTEND=noninteractive

# invoke-rc.d asks /usr/sbin/policy-rc.d whether a service may start; exit 101 means "no".
# Install the file only for the duration of this script if it is not already there, and
# restore the previous state afterwards, so the machine's policy is left as we found it.
POLICY=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$POLICY" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$POLICY"
    chmod 755 "$POLICY"
    created_policy=1
fi
cleanup() {
    if [ "$created_policy" = 1 ]; then rm -f "$POLICY"; fi
}
trap cleanup EXIT

missing=()
for p in "${PACKAGES[@]}" "${APP_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done

if [ "${#missing[@]}" -eq 0 ]; then
    echo "install-lab.sh: all $((${#PACKAGES[@]} + ${#APP_PACKAGES[@]})) lab packages already installed"
else
    echo "install-lab.sh: installing ${missing[*]}"
    apt-get update
    apt-get install -y --no-install-recommends "${PACKAGES[@]}" "${APP_PACKAGES[@]}"
fi

# Belt and braces for machines where a service got started anyway (e.g. a policy file that
# allowed it): stop the system instances so they do not hold :80 or :3306. Only pid files of
# the system services are touched; no systemd/service/apache2ctl (PID 1 may not be an init).
for pidfile in /run/nginx.pid /run/apache2/apache2.pid /run/php/php8.2-fpm.pid /run/mysqld/mysqld.pid; do
    if [ -s "$pidfile" ]; then
        pid=$(cat "$pidfile")
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            echo "install-lab.sh: stopping system service with pid $pid ($pidfile)"
            kill -TERM "$pid" || true
        fi
    fi
done

echo "install-lab.sh: done"
