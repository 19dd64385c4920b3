<?php
// S4's slow image gallery: one page of the album, every thumbnail made on this request with
// GD from the full-size JPEG (no thumbnail cache: the slowness is the point; nginx's
// fastcgi_cache in front is the cure S4 measured). ?page=N (1-based), ?per=6 thumbnails.
const IMAGES = '{{IMAGES}}';
const COUNT = {{COUNT}};
const THUMB_W = 240;

$per = max(1, min(24, (int)($_GET['per'] ?? 6)));
$pages = intdiv(COUNT + $per - 1, $per);
$page = (int)($_GET['page'] ?? 1);
if ($page < 1 || $page > $pages) {
    http_response_code(404);
    echo "no page $page (1..$pages)\n";
    exit;
}

function thumbnail(string $path): string {
    $src = imagecreatefromjpeg($path);
    if ($src === false) {
        throw new RuntimeException("cannot read $path");
    }
    $w = imagesx($src);
    $h = imagesy($src);
    $th = intdiv($h * THUMB_W, $w);
    $dst = imagecreatetruecolor(THUMB_W, $th);
    imagecopyresampled($dst, $src, 0, 0, 0, 0, THUMB_W, $th, $w, $h);
    ob_start();
    imagejpeg($dst, null, 80);
    return ob_get_clean();
}

$t0 = hrtime(true);
$items = [];
for ($i = ($page - 1) * $per; $i < min(COUNT, $page * $per); $i++) {
    $name = sprintf('img%03d.jpg', $i);
    $jpeg = thumbnail(IMAGES . '/' . $name);
    $items[] = sprintf(
        '<figure><img src="data:image/jpeg;base64,%s" width="%d" alt="%s"><figcaption>%s (%d bytes)</figcaption></figure>',
        base64_encode($jpeg), THUMB_W, $name, $name, strlen($jpeg)
    );
}
$ms = (hrtime(true) - $t0) / 1e6;
header('Content-Type: text/html; charset=utf-8');
echo "<!DOCTYPE html>\n<html><head><title>Gallery page $page of $pages</title></head><body>\n";
echo "<h1>Gallery page $page of $pages</h1>\n", implode("\n", $items), "\n";
printf("<p>%d thumbnails made in %.1f ms by pid %d</p>\n", count($items), $ms, getmypid());
if ($page < $pages) {
    printf("<a href=\"/?page=%d\">next</a>\n", $page + 1);
}
echo "</body></html>\n";
