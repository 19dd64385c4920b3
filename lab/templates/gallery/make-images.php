<?php
// The gallery's album, made once per prefix by `overload lab up gallery` with GD (php-cli,
// as www-data): COUNT photo-sized JPEGs (gradients, shapes, noise: they compress and decode
// like photos, not like flat colour). Arguments: the folder, the count.
if (PHP_SAPI !== 'cli' || $argc !== 3) {
    exit(2);
}
[$_, $dir, $count] = $argv;
mt_srand(17);
for ($i = 0; $i < (int)$count; $i++) {
    $w = 1600;
    $h = 1200;
    $im = imagecreatetruecolor($w, $h);
    $r0 = mt_rand(0, 255);
    $g0 = mt_rand(0, 255);
    $b0 = mt_rand(0, 255);
    for ($y = 0; $y < $h; $y += 4) {
        $c = imagecolorallocate($im, ($r0 + $y / 6) % 256, ($g0 + $y / 9) % 256, ($b0 + $y / 12) % 256);
        imagefilledrectangle($im, 0, $y, $w - 1, $y + 3, $c);
    }
    for ($k = 0; $k < 60; $k++) {
        $c = imagecolorallocatealpha($im, mt_rand(0, 255), mt_rand(0, 255), mt_rand(0, 255), mt_rand(20, 90));
        imagefilledellipse($im, mt_rand(0, $w), mt_rand(0, $h), mt_rand(40, 500), mt_rand(40, 500), $c);
    }
    for ($k = 0; $k < 20000; $k++) {
        imagesetpixel($im, mt_rand(0, $w - 1), mt_rand(0, $h - 1), mt_rand(0, 0xffffff));
    }
    $tmp = sprintf('%s/img%03d.jpg.tmp', $dir, $i);
    imagejpeg($im, $tmp, 85);
    rename($tmp, sprintf('%s/img%03d.jpg', $dir, $i));
}
echo "made $count\n";
