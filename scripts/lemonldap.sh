#!/usr/bin/env bash
# LemonLDAP::NG, from Debian's packages, as an independent CAS server and SAML 2.0 identity provider
# on loopback for the university protocol tests (test/helpers/lemonldap.ts; docs/university-providers.md).
#
#   scripts/lemonldap.sh install                  Debian's packages, if missing (CI calls this)
#   scripts/lemonldap.sh start DIR PORT SP_BASE   a portal at http://127.0.0.1:PORT/ with its state in DIR
#   scripts/lemonldap.sh stop DIR                 stops the portal started in DIR and removes DIR
#
# The portal is LemonLDAP::NG's own PSGI application (Lemonldap::NG::Portal::Main) under Plack's
# standalone HTTP server: no nginx, no FastCGI, nothing system-wide is changed or started. Its
# configuration is the package's demo configuration (users dwho, rtyler, msmith, french; the
# password is the login) with, set through lemonldap-ng-cli: the CAS server (CAS 2 and 3, any
# service), the SAML IdP with a fresh RSA key (RSA-SHA256), and campusgate registered as a SAML
# service provider whose entity id is SP_BASE/authorize/university/saml and whose assertion
# consumer service is SP_BASE/authorize/university/callback (HTTP-POST).
set -euo pipefail

# The portal and what it loads at start-up that the packages only recommend or suggest: Lasso
# (SAML), the e-mail and MIME modules, XML::LibXML, and ImageMagick's Perl module for its captcha.
PACKAGES=(
  lemonldap-ng liblasso-perl libplack-perl openssl curl
  libemail-sender-perl libmime-tools-perl libxml-libxml-perl libxml-simple-perl
  libapache-session-browseable-perl libstring-random-perl libcookie-baker-xs-perl
  libhttp-parser-xs-perl libio-string-perl libcrypt-openssl-bignum-perl libconvert-base32-perl
  libunicode-string-perl libnet-ldap-perl libio-socket-timeout-perl libxml-libxslt-perl
  libgd-securityimage-perl libgd-perl libipc-run-perl libimage-magick-perl
)

install_packages() {
  local installed
  installed=$(dpkg-query -W -f '${Status}\n' "${PACKAGES[@]}" 2>/dev/null | grep -c 'install ok installed' || true)
  [ "$installed" -eq "${#PACKAGES[@]}" ] && return 0
  apt-get update -qq
  # The portal's hard dependency on a web server is met by nginx-light and the FastCGI server; the
  # portal runs under Plack instead, so neither is started: invoke-rc.d is told so while they
  # install (policy-rc.d exit 101, as in container images), unless a policy is already in place.
  local policy=/usr/sbin/policy-rc.d made_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod +x "$policy"
    made_policy=1
  fi
  local status=0
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${PACKAGES[@]}" nginx-light lemonldap-ng-fastcgi-server >/dev/null || status=$?
  if [ "$made_policy" -eq 1 ]; then rm -f "$policy"; fi
  return "$status"
}

start() {
  local dir=$1 port=$2 sp_base=${3%/}
  local portal="http://127.0.0.1:${port}"
  mkdir -p "$dir"/conf "$dir"/sessions/lock "$dir"/psessions/lock "$dir"/cache "$dir"/notifications
  cp /var/lib/lemonldap-ng/conf/lmConf-1.json "$dir"/conf/lmConf-1.json
  cat >"$dir"/lemonldap-ng.ini <<EOF
[all]
logLevel = warn
logger = Lemonldap::NG::Common::Logger::Std
checkTime = 1
[configuration]
type = File
dirName = $dir/conf
localStorage = Cache::FileCache
localStorageOptions = { 'namespace' => 'lemonldap-ng-config', 'default_expires_in' => 600, 'cache_root' => '$dir/cache', 'cache_depth' => 3 }
[portal]
staticPrefix = /static
templateDir = /usr/share/lemonldap-ng/portal/templates
languages = en
[handler]
status = 0
[manager]
templateDir = /usr/share/lemonldap-ng/manager/htdocs/templates
EOF
  # The IdP's signing key and its self-signed certificate, new for every start.
  openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 2 -subj /CN=lemonldap-ng-test \
    -keyout "$dir"/idp.key -out "$dir"/idp.crt 2>/dev/null
  local sp_metadata
  sp_metadata=$(
    cat <<EOF
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="${sp_base}/authorize/university/saml"><md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol" AuthnRequestsSigned="false" WantAssertionsSigned="true"><md:NameIDFormat>urn:oasis:names:tc:SAML:2.0:nameid-format:persistent</md:NameIDFormat><md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${sp_base}/authorize/university/callback" index="0" isDefault="true"/></md:SPSSODescriptor></md:EntityDescriptor>
EOF
  )
  # Everything in one JSON document merged into the configuration.
  SP_METADATA=$sp_metadata PORTAL=$portal DIR=$dir perl -MJSON::PP -e '
    local $/;
    open my $key, "<", "$ENV{DIR}/idp.key" or die; my $k = <$key>;
    open my $crt, "<", "$ENV{DIR}/idp.crt" or die; my $c = <$crt>;
    my $attr = sub { my ($name, $oid) = @_; "1;$oid;urn:oasis:names:tc:SAML:2.0:attrname-format:uri;$name" };
    print JSON::PP->new->canonical->encode({
      portal => "$ENV{PORTAL}/",
      securedCookie => 0,
      globalStorage => "Apache::Session::File",
      globalStorageOptions => { Directory => "$ENV{DIR}/sessions", LockDirectory => "$ENV{DIR}/sessions/lock" },
      persistentStorage => "Apache::Session::File",
      persistentStorageOptions => { Directory => "$ENV{DIR}/psessions", LockDirectory => "$ENV{DIR}/psessions/lock" },
      notification => 0,
      portalCheckLogins => 0,
      loginHistoryEnabled => 0,
      requireToken => 0,
      trustedDomains => "",
      issuerDBCASActivation => 1,
      casAccessControlPolicy => "none",
      casAttr => "uid",
      casAttributes => { cn => "cn", mail => "mail", uid => "uid" },
      issuerDBSAMLActivation => 1,
      samlEntityID => "$ENV{PORTAL}/saml/metadata",
      samlServicePrivateKeySig => $k,
      samlServicePublicKeySig => $c,
      samlServiceUseCertificateInResponse => 1,
      samlServiceSignatureMethod => "RSA_SHA256",
      samlIDPSSODescriptorWantAuthnRequestsSigned => 0,
      samlSPMetaDataXML => { campusgate => { samlSPMetaDataXML => $ENV{SP_METADATA} } },
      samlSPMetaDataOptions => { campusgate => {
        samlSPMetaDataOptionsNameIDFormat => "persistent",
        samlSPMetaDataOptionsSignSSOMessage => 1,
        samlSPMetaDataOptionsSignatureMethod => "RSA_SHA256",
        samlSPMetaDataOptionsCheckSSOMessageSignature => 0,
        samlSPMetaDataOptionsEncryptionMode => "none",
        samlSPMetaDataOptionsEnableIDPInitiatedURL => 0,
        samlSPMetaDataOptionsOneTimeUse => 0,
      } },
      samlSPMetaDataExportedAttributes => { campusgate => {
        mail => $attr->("mail", "urn:oid:0.9.2342.19200300.100.1.3"),
        cn => $attr->("displayName", "urn:oid:2.16.840.1.113730.3.1.241"),
        uid => $attr->("uid", "urn:oid:0.9.2342.19200300.100.1.1"),
      } },
    })' >"$dir"/campusgate.json
  LLNG_DEFAULTCONFFILE="$dir"/lemonldap-ng.ini /usr/share/lemonldap-ng/bin/lemonldap-ng-cli \
    --user=root --group=root -yes 1 -safe 1 merge "$dir"/campusgate.json >"$dir"/cli.log 2>&1 || {
    cat "$dir"/cli.log >&2
    exit 1
  }
  LLNG_DEFAULTCONFFILE="$dir"/lemonldap-ng.ini nohup plackup -s HTTP::Server::PSGI \
    --host 127.0.0.1 --port "$port" /usr/share/lemonldap-ng/portal/htdocs/index.psgi \
    >"$dir"/portal.log 2>&1 &
  echo $! >"$dir"/portal.pid
  for _ in $(seq 1 120); do
    if curl -sf -o /dev/null "$portal/saml/metadata"; then
      echo "$portal"
      return 0
    fi
    if ! kill -0 "$(cat "$dir"/portal.pid)" 2>/dev/null; then break; fi
    sleep 0.5
  done
  echo "LemonLDAP::NG did not start at $portal:" >&2
  grep -v -e 'Initialization failed' -e 'GET /saml/metadata' "$dir"/portal.log | head -n 40 >&2
  stop "$dir"
  exit 1
}

stop() {
  local dir=$1
  if [ -f "$dir"/portal.pid ]; then
    kill "$(cat "$dir"/portal.pid)" 2>/dev/null || true
  fi
  rm -rf "$dir"
}

case "${1:-}" in
  install) install_packages ;;
  start) start "$2" "$3" "$4" ;;
  stop) stop "$2" ;;
  *)
    echo "usage: $0 install | start DIR PORT SP_BASE | stop DIR" >&2
    exit 2
    ;;
esac
